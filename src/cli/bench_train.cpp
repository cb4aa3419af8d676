#include "cli/bench_train.h"
#include "cli/bench_train_results.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "backends/registry.h"
#include "cli/flags.h"
#include "cli/gemm_limit.h"
#include "cli/launch.h"
#include "cli/mfu.h"
#include "common/error.h"
#include "common/output_file.h"
#include "common/sha256.h"
#include "common/work_clock.h"
#include "engine/engine.h"
#include "model/gpt.h"
#include "partition/init.h"

namespace zero::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The two benchmark shapes: GPT-2-style with byte vocabulary (V = 256), context T = seq_len.
//   10m: C=384 L=6  H=6   -> 10.8M parameters at T=256
//   50m: C=768 L=7  H=12  -> 50.0M parameters at T=256
// and GPT-2 124M (V = 50257, C=768 L=12 H=12; tokens still drawn from the first 256) for the GPU.
// bench/pytorch_ddp_gpt.py must list the same shapes.
struct BenchModel {
  const char* name;
  int vocab, channels, layers, heads;
};
// "all" runs the first two; gpt2 is GPT-2 124M (with --seq-len 1024), for the GPU.
constexpr BenchModel kModels[] = {{"10m", 256, 384, 6, 6}, {"50m", 256, 768, 7, 12}, {"gpt2", 50257, 768, 12, 12}};

}  // namespace

std::vector<FlagSpec> bench_train_flags() {
  return {{"model", "which shape: 10m, 50m, all (both), or gpt2 (GPT-2 124M: V=50257 C=768 L=12 H=12)", true, "all"},
          {"device", cat(backend_names(), " (where a device's peak FLOP/s is known, prints model FLOPs utilisation)"), true, default_device()},
          {"micro-batch", "sequences per rank per step", true, "4"},
          {"seq-len", "tokens per sequence (also the context length T)", true, "256"},
          {"warmup", "steps run before timing (per stage)", true, "2"},
          {"steps", "timed steps (per stage)", true, "6"},
          {"ranks", "data-parallel ranks: launches `mpirun -np N` itself (or N thread ranks with --comm threads)", true, "2"},
          {"oversubscribe", "with --ranks N, start the ranks even beyond 4 per hardware thread of this machine", false, ""},
          {"hostfile", "with --ranks N, start the ranks on the hosts of this Open MPI hostfile (HOST slots=K per line), each "
                       "checked first to answer the launcher agent (ssh, or OMPI_MCA_plm_rsh_agent)", true, ""},
          {"host-timeout", "seconds each --hostfile host has to answer before the run is refused", true, "10"},
          {"comm", "backend: auto (mpi under mpirun, else launch mpirun), mpi, threads", true, "auto"},
          {"stage", "ZeRO stage 0-3, or a list such as 0,1,2,3: those stages run in turn, one step each, and are "
                    "compared with the first listed",
           true, "0"},
          {"dtype", "fp32, or bf16 / fp16 mixed precision (16-bit parameters, gradients and collectives; fp32 master and Adam state); "
                    "a list such as fp32,bf16 runs each model in each in turn and prints each one's tokens/s ratio to the first",
           true, "fp32"},
          {"activation-checkpointing", "each GPT block keeps only its input and recomputes its forward in backward", false, ""},
          {"compare-checkpointing", "each stage runs twice in turn, one step each: without and with activation checkpointing "
                                    "(the step-time ratio beside the activations each holds)", false, ""},
          {"determinism", "deterministic (sums in rank order: the same bits on every backend, stage and placement; the order of "
                          "collectives checked across ranks) or fast (the transport's own reduce-scatter and all-reduce, MPI's or "
                          "NCCL's order; no order check; sums may differ in the last bits)", true, "deterministic"},
          {"json", "also write the results as JSON to this file", true, ""}};
}

namespace {

// "fp32", or a list of distinct precisions: "fp32,bf16".
std::vector<Dtype> parse_bench_dtypes(const std::string& value) {
  std::vector<Dtype> dtypes;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(value.find(',', start), value.size());
    const std::string v = value.substr(start, comma - start);
    const Dtype d = v == "fp32" ? Dtype::kF32 : v == "bf16" ? Dtype::kBf16 : v == "fp16" ? Dtype::kF16 : throw ConfigError(
        cat("[cli] --dtype '", value, "': '", v, "' is not fp32, bf16 or fp16; give one, or distinct ones separated by commas"));
    if (std::find(dtypes.begin(), dtypes.end(), d) != dtypes.end()) throw ConfigError(cat("[cli] --dtype '", value, "': ", v, " is listed twice"));
    dtypes.push_back(d);
    if (comma == value.size()) return dtypes;
    start = comma + 1;
  }
}

// Parameters + gradients + optimizer state in the device and host tiers: what an engine keeps.
std::uint64_t model_state_bytes(const Ledger& ledger) {
  std::uint64_t b = 0;
  for (Tier t : {Tier::kDevice, Tier::kHost})
    for (Category c : {Category::kParameters, Category::kGradients, Category::kOptimizerState}) b += ledger.current(t, c);
  return b;
}

// --stage: "2" or "0,1,2,3". Each stage 0-3, at most once, in the order given (the first is the
// one the others are compared with).
std::vector<int> parse_stages(const std::string& value) {
  const auto refuse = [&](const std::string& why) {
    return ConfigError(cat("[cli] --stage '", value, "': ", why,
                           "; give a ZeRO stage 0-3, or distinct stages separated by commas, such as 0,1,2,3"));
  };
  std::vector<int> stages;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(value.find(',', start), value.size());
    const std::string word = value.substr(start, comma - start);
    if (word.size() != 1 || word[0] < '0' || word[0] > '3') {
      throw refuse(word.empty() ? "an empty entry" : cat("'", word, "' is not a stage 0-3"));
    }
    const int stage = word[0] - '0';
    if (std::find(stages.begin(), stages.end(), stage) != stages.end()) throw refuse(cat("stage ", stage, " is listed twice"));
    stages.push_back(stage);
    if (comma == value.size()) return stages;
    start = comma + 1;
  }
}

// One stage's engine on the shared model, and what its steps measured on this rank.
struct StageRun {
  int stage = 0;
  bool checkpointing = false;
  Gpt* gpt = nullptr;              // the model it trains (one per checkpointing setting)
  std::unique_ptr<Engine> engine;
  std::vector<float> losses;       // (warmup + steps) this rank's loss at every step
  std::vector<double> local_ms;    // (steps) this rank's forward + backward + optimizer step
  std::vector<double> window_ms;   // (steps) barrier to barrier around the step (rank 0's is reported)
  double compute_ms = 0;           // mean over timed steps of forward + backward
  double optimizer_ms = 0;         // mean over timed steps of Engine::step(): the rest of the
                                   // reduction, averaging, Adam, zeroing the gradients
  std::uint64_t state_bytes = 0;   // this engine's model state on this rank (ledger), after construction
  std::uint64_t sent_bytes = 0;    // bytes this rank sent in the last step
  // This rank's compute thread's work clock (common/work_clock.h) over the timed steps, summed:
  // during forward + backward, and during Engine::step().
  WorkSeconds fb_work, step_work;
};

// This rank's synthetic micro-batch for `step`: uniform byte tokens, counter-based (the values do
// not matter for speed; they keep the loss near ln V, as real text would at the start).
void fill_tokens(std::uint64_t step, int rank, int V, std::vector<std::int32_t>& in, std::vector<std::int32_t>& tgt) {
  const std::uint64_t key = hash_name("bench train") ^ (step * 1000003ULL + static_cast<std::uint64_t>(rank));
  for (std::size_t i = 0; i < in.size(); ++i) {
    in[i] = static_cast<std::int32_t>(counter_uniform(key, 2 * i) * V);
    tgt[i] = static_cast<std::int32_t>(counter_uniform(key, 2 * i + 1) * V);
  }
}

// One training step of one stage on the batch in `in`/`tgt`, ending in a barrier so that the next
// stage's step starts with every rank free. `timed`: record its times.
void run_step(StageRun& run, const std::vector<std::int32_t>& in, const std::vector<std::int32_t>& tgt,
              bool timed, int steps, Communicator& comm) {
  Gpt& gpt = *run.gpt;
  const WorkSeconds w0 = work_seconds();
  const auto t0 = Clock::now();
  gpt.set_batch(in.data(), tgt.data());
  run.losses.push_back(run.engine->forward_backward(true));
  const auto t1 = Clock::now();
  const WorkSeconds w1 = work_seconds();
  run.engine->step();
  const auto t2 = Clock::now();
  const WorkSeconds w2 = work_seconds();
  run.sent_bytes = run.engine->last_step_traffic().total_sent();
  comm.barrier();
  const auto t3 = Clock::now();
  if (!timed) return;
  const auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  run.local_ms.push_back(ms(t2 - t0));
  run.window_ms.push_back(ms(t3 - t0));
  run.compute_ms += ms(t1 - t0) / steps;
  run.optimizer_ms += ms(t2 - t1) / steps;
  for (int w = 0; w < kNumWork; ++w) {
    run.fb_work.seconds[w] += (w1 - w0).seconds[w];
    run.step_work.seconds[w] += (w2 - w1).seconds[w];
  }
}

// The run's timed steps as rank 0's compute thread spent them (see Breakdown); `tokens_per_step`
// counts every rank's.
Breakdown breakdown_of(const StageRun& run, int steps, double tokens_per_step) {
  const auto ms = [&](double seconds) { return seconds * 1e3 / steps; };
  const WorkSeconds& f = run.fb_work;
  Breakdown b;
  b.step = run.compute_ms + run.optimizer_ms;
  b.matmul = ms(f[Work::kMatmul] + run.step_work[Work::kMatmul]);
  b.attention = ms(f[Work::kAttention]);
  b.norm = ms(f[Work::kNorm]);
  b.pointwise = ms(f[Work::kPointwise]);
  b.loss = ms(f[Work::kLoss]);
  b.embedding = ms(f[Work::kEmbedding]);
  b.optimizer = ms(f[Work::kOptimizer] + run.step_work[Work::kOptimizer]);
  b.wait_fb = ms(f[Work::kWait]);
  b.wait_step = ms(run.step_work[Work::kWait]);
  b.copy = ms(f[Work::kCopy] + run.step_work[Work::kCopy]);
  b.allocate = ms(f[Work::kAllocate] + run.step_work[Work::kAllocate]);
  b.rest = b.step - b.matmul - b.other_kernels() - b.optimizer - b.wait_fb - b.wait_step - b.copy - b.allocate;
  b.gemm_limit_in_step = b.matmul > 0 ? tokens_per_step / (b.matmul / 1e3) : 0;
  return b;
}

// Every step: each stage in turn, in the listed order, on the same batch. Alternating step by step
// spreads the machine's noise (this VM shares its cores) evenly over the stages, which separate
// runs one after the other would not. With a `probe`, each round ends with a pass of the
// GEMM-bound limit's products (cli/gemm_limit.h), the timed rounds' in `passes`.
void run_rounds(std::vector<StageRun>& runs, int B, int T, int warmup, int steps, Communicator& comm, GemmLimitProbe* probe,
                std::vector<double>& passes) {
  std::vector<std::int32_t> in(static_cast<std::size_t>(B) * T), tgt(in.size());
  comm.barrier();
  for (int s = 0; s < warmup + steps; ++s) {
    fill_tokens(static_cast<std::uint64_t>(s), comm.rank(), 256, in, tgt);
    for (StageRun& run : runs) run_step(run, in, tgt, s >= warmup, steps, comm);
    if (probe == nullptr) continue;
    const double pass = probe->time_pass(comm);
    if (s >= warmup) passes.push_back(pass);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Gathers the ranks' step times and loss checks into rank 0's figures, and checks the final
// weights. Collective: every rank calls it with its runs in the same order.
std::vector<StageResult> collect(std::vector<StageRun>& runs, int B, int T, int steps, Communicator& comm) {
  const int n = comm.size();
  std::vector<StageResult> results;
  for (StageRun& run : runs) {
    StageResult r;
    r.stage = run.stage;
    r.checkpointing = run.checkpointing;
    std::vector<double> all(run.local_ms.size() * n);
    comm.all_gather_bytes(run.local_ms.data(), run.local_ms.size() * sizeof(double), all.data());
    for (std::size_t i = 0; i < run.local_ms.size(); ++i) {
      double m = 0;
      for (int k = 0; k < n; ++k) m = std::max(m, all[k * run.local_ms.size() + i]);
      r.step_ms.push_back(m);
    }
    for (double w : run.window_ms) r.seconds += w / 1e3;
    r.window_ms = run.window_ms;
    r.tokens_per_second = static_cast<double>(steps) * B * T * n / r.seconds;
    r.compute_ms = run.compute_ms;
    r.optimizer_ms = run.optimizer_ms;
    r.breakdown = breakdown_of(run, steps, static_cast<double>(B) * T * n);
    r.state_bytes = run.state_bytes;
    r.sent_bytes = run.sent_bytes;
    r.first_loss = run.losses.front();
    r.last_loss = run.losses.back();
    const char same = std::memcmp(run.losses.data(), runs[0].losses.data(), run.losses.size() * sizeof(float)) == 0;
    std::vector<char> every(n);
    comm.all_gather_bytes(&same, 1, every.data());
    r.losses_match = std::all_of(every.begin(), every.end(), [](char c) { return c != 0; });
    const std::vector<float> weights = run.engine->full_parameters();  // a collective in stage 3
    r.weights_sha256 = sha256_hex(weights.data(), weights.size() * sizeof(float));
    results.push_back(std::move(r));
  }
  const StageResult& first = results[0];
  for (StageResult& r : results) {
    r.tokens_ratio = r.tokens_per_second / first.tokens_per_second;
    for (std::size_t i = 0; i < r.step_ms.size(); ++i) r.step_ratios.push_back(first.step_ms[i] / r.step_ms[i]);
    r.median_step_ratio = median(r.step_ratios);
    r.best_step_ratio = *std::min_element(first.step_ms.begin(), first.step_ms.end()) /
                        *std::min_element(r.step_ms.begin(), r.step_ms.end());
  }
  return results;
}

// All of the listed stages' engines are built at once, on one shared model (its activations
// serve every engine in turn: an engine touches the module only inside forward_backward). That
// costs the sum of the stages' model state: for 50m on 2 ranks with stages 0-3, 16 + 12 + 10 + 8
// bytes per parameter = about 2.2 GiB per rank (the header line prints the ledger's figure), well
// within this machine's 23 GiB. Building one engine at a time per round instead would
// re-initialise (and re-fault) the state each round and restart training from step 0, so the
// stages could not train on through the same steps for the bit-identity check.
ModelResult run_model(const BenchModel& bm, int B, int T, int warmup, int steps, const std::vector<int>& stages, Dtype dtype,
                      const std::vector<bool>& checkpointing, const std::string& device, Communicator& comm,
                      Ledger& ledger) {
  ModelResult m;
  m.model = bm.name;
  m.dtype = dtype;
  const GptCompute compute{device, dtype == Dtype::kBf16 ? Dtype::kBf16 : Dtype::kF32};  // bf16 operands where the device has them
  if (const auto describe = find_backend(device).describe_matmul; describe != nullptr) m.products = describe(compute.matmul);
  m.shape = GptShape{bm.vocab, T, bm.channels, bm.layers, bm.heads};
  m.parameters = m.shape.num_parameters();
  EngineConfig config;
  config.adam = AdamConfig{3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, true};  // AdamW, as the PyTorch script
  config.precision.compute = dtype;
  config.device = device;
  std::vector<std::unique_ptr<Gpt>> gpts;  // one per checkpointing setting, in the order given
  std::vector<std::uint64_t> activations;
  for (bool ckpt : checkpointing) {
    const std::uint64_t before = ledger.current(Tier::kDevice, Category::kActivations);
    gpts.push_back(std::make_unique<Gpt>(m.shape, B, ledger, GptCheckpointing{ckpt, false}, compute));
    activations.push_back(ledger.current(Tier::kDevice, Category::kActivations) - before);
  }
  m.activation_bytes = activations[0];
  std::vector<StageRun> runs;
  for (int stage : stages) {
    for (std::size_t v = 0; v < checkpointing.size(); ++v) {
      config.stage = stage;
      StageRun& run = runs.emplace_back();
      run.stage = stage;
      run.checkpointing = checkpointing[v];
      run.gpt = gpts[v].get();
      const std::uint64_t before = model_state_bytes(ledger);
      run.engine = std::make_unique<Engine>(config, *run.gpt, comm, ledger);
      run.state_bytes = model_state_bytes(ledger) - before;
    }
  }
  m.engine_bytes = ledger.usage(Tier::kDevice).total_current;
  std::unique_ptr<GemmLimitProbe> probe;  // only where the products run on this host's libraries
  if (find_facts(device).device_tier_is_host) probe = std::make_unique<GemmLimitProbe>(m.shape, B, compute);
  run_rounds(runs, B, T, warmup, steps, comm, probe.get(), m.gemm_passes);
  m.stages = collect(runs, B, T, steps, comm);
  if (probe) {
    m.gemm_flops = probe->flops_per_rank();
    m.gemm_seconds = median(m.gemm_passes);
    m.gemm_limit = static_cast<double>(B) * T * comm.size() / m.gemm_seconds;
    for (StageResult& r : m.stages) {
      for (std::size_t i = 0; i < r.window_ms.size(); ++i) r.limit_ratios.push_back(m.gemm_passes[i] * 1e3 / r.window_ms[i]);
      r.limit_ratio = median(r.limit_ratios);
    }
  }
  for (std::size_t i = 0; i < m.stages.size(); ++i) m.stages[i].activation_bytes = activations[i % checkpointing.size()];
  if (const double peak = find_facts(device).peak_bf16; peak > 0) {
    for (StageResult& r : m.stages) {
      r.mfu = model_flops_utilisation(r.tokens_per_second / comm.size(), m.shape, peak);
      r.peak_flops = peak;
    }
  }
  for (const StageResult& r : m.stages) {
    m.identical = m.identical && r.losses_match && r.weights_sha256 == m.stages[0].weights_sha256;
  }
  return m;
}

}  // namespace

int bench_train_main(const std::vector<std::string>& args) {
  Flags flags("zero bench train", bench_train_flags(), args);
  if (flags.help()) {
    std::printf("Training speed (tokens/s) of a ~10M- and a ~50M-parameter GPT on synthetic tokens, ZeRO stage 0 on 2\n"
                "ranks by default; --stage 0,1,2,3 runs the stages in turn, one step each, and prints each one's ratio to\n"
                "the first; compare with PyTorch DDP: bench/compare_train.sh.\n\n%s",
                flags.usage().c_str());
    return 0;
  }
  const std::string which = flags.get("model");
  if (which != "all" && which != "10m" && which != "50m" && which != "gpt2") {
    throw ConfigError(cat("[bench] --model must be 10m, 50m, all or gpt2, not '", which, "'"));
  }
  const std::string device = flags.get("device");
  if (!is_user_backend(device)) throw ConfigError(cat("[bench] --device must be ", backend_names(), ", not '", device, "'"));
  require_backend_available(device, "[bench] --device");
  // Every flag and the output path are checked before mpirun: one message, not one per rank.
  const std::vector<int> stages = parse_stages(flags.get("stage"));
  const std::vector<Dtype> dtypes = parse_bench_dtypes(flags.get("dtype"));
  const int B = static_cast<int>(flags.get_int("micro-batch", 1, 4096));
  const int T = static_cast<int>(flags.get_int("seq-len", 1, 65536));
  const int warmup = static_cast<int>(flags.get_int("warmup", 0, 1000));
  const int steps = static_cast<int>(flags.get_int("steps", 1, 100000));
  const std::string json_path = flags.get("json");
  const Determinism determinism = parse_determinism(flags.get("determinism"), "--determinism");
  if (flags.has("compare-checkpointing") && flags.has("activation-checkpointing")) {
    throw ConfigError("[bench] --compare-checkpointing already runs with and without activation checkpointing; drop "
                      "--activation-checkpointing");
  }
  const std::vector<bool> checkpointing = flags.has("compare-checkpointing") ? std::vector<bool>{false, true}
                                                                             : std::vector<bool>{flags.has("activation-checkpointing")};
  planned_world(flags, true);
  check_output_paths({{"--json", json_path}});
  if (wants_mpi_job(flags)) return relaunch_under_mpirun(flags, {"bench", "train"}, args);
  return run_ranks(flags, [&](Communicator& comm, Ledger& ledger) {
    set_work_clock(true);  // this rank's compute thread: the breakdown of its steps
    nlohmann::json results = nlohmann::json::array();
    comm.set_determinism(determinism);
    if (comm.rank() == 0) {
      std::string what = stages.size() == 1 ? cat("ZeRO stage ", stages[0]) : cat("ZeRO stages ", join(stages), " in turn, one step each");
      if (checkpointing.size() > 1) what += ", each without and with activation checkpointing in turn";
      std::printf("zero bench train: %s, %d ranks (%s), %d OpenMP / %d OpenBLAS (%s) threads per rank, micro-batch %d x "
                  "T=%d per rank, device %s, AdamW, %s, synthetic tokens; %d warm-up + %d timed steps%s\n",
                  what.c_str(), comm.size(), comm.backend().c_str(), omp_get_max_threads(), openblas_get_num_threads(),
                  openblas_get_corename(), B, T, device.c_str(), precisions_text(dtypes).c_str(), warmup, steps,
                  determinism == Determinism::kFast ? "; --determinism fast" : "");
      std::fflush(stdout);
    }
    bool identical = true;
    for (const BenchModel& bm : kModels) {
      if (which == "all" ? std::string(bm.name) == "gpt2" : which != bm.name) continue;
      std::vector<ModelResult> by_dtype;
      for (Dtype dtype : dtypes) {
        const ModelResult& m = by_dtype.emplace_back(run_model(bm, B, T, warmup, steps, stages, dtype, checkpointing, device, comm, ledger));
        identical = identical && m.identical;
        if (comm.rank() != 0) continue;
        print_model(m, steps, determinism);
        append_json(m, results);
      }
      if (comm.rank() == 0) print_precision_ratios(by_dtype);
    }
    if (comm.rank() == 0 && !json_path.empty()) {
      const nlohmann::json j = {{"tool", "zero bench train"}, {"device", device}, {"stages", stages}, {"dtype", flags.get("dtype")},
                                {"ranks", comm.size()}, {"backend", comm.backend()},
                                {"omp_threads_per_rank", omp_get_max_threads()}, {"openblas_threads_per_rank", openblas_get_num_threads()},
                                {"openblas_core", openblas_get_corename()}, {"micro_batch", B}, {"seq_len", T},
                                {"warmup", warmup}, {"steps", steps}, {"bit_identical", identical},
                                {"determinism", determinism_name(determinism)}, {"results", results}};
      write_output_file({"--json", json_path}, j.dump(2) + "\n");
    }
    return identical || determinism == Determinism::kFast ? 0 : 1;  // fast: the bits may differ
  });
}

}  // namespace zero::cli
