#include "cli/demo.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/flags.h"
#include "cli/launch.h"
#include "cli/svg.h"
#include "common/error.h"
#include "common/output_file.h"
#include "data/load.h"
#include "train/trainer.h"

namespace zero::cli {
namespace {

constexpr int kDevice = static_cast<int>(Tier::kDevice);
int cat_index(Category c) { return static_cast<int>(c); }

struct StageRun {
  StageRun(int s, bool opt = false, bool param = false) : stage(s), offload_optimizer(opt), offload_param(param) {}
  int stage = 0;
  bool offload_optimizer = false, offload_param = false;
  TrainResult result;
  std::string label() const {
    return cat(stage, offload_optimizer ? "+opt" : "", offload_param ? "+param" : "");
  }
};

// The paper's per-rank bytes by category: fp32 Adam 4 + 4 + 8 bytes per parameter; mixed
// precision 2 + 2 + 12 (16-bit parameters and gradients; f32 master, m and v: K = 12).
struct Formula {
  double params, grads, optim;
  double total() const { return params + grads + optim; }
};

// Bytes per parameter of the precision: b for a parameter and a gradient, k of optimizer state.
struct ElementSizes {
  double b = 4, k = 8;
};

ElementSizes element_sizes(const TrainConfig& c) { return c.bf16 || c.fp16 ? ElementSizes{2, 12} : ElementSizes{4, 8}; }

// Device-tier model state; with offload the shard's master, moments and gradients go to the host
// (16Ψ/N there) and the device keeps only the parameters it computes with.
Formula formula_model_state(const StageRun& run, double psi, int n, ElementSizes e) {
  if (run.offload_optimizer) return {run.offload_param ? 0.0 : (run.stage == 3 ? e.b * psi / n : e.b * psi), 0.0, 0.0};
  switch (run.stage) {
    case 0: return {e.b * psi, e.b * psi, e.k * psi};
    case 1: return {e.b * psi, e.b * psi, e.k * psi / n};
    case 2: return {e.b * psi, e.b * psi / n, e.k * psi / n};
    default: return {e.b * psi / n, e.b * psi / n, e.k * psi / n};
  }
}

// Bytes each rank sends per step: 2Ψ(N-1)/N elements in stages 0-2, 3Ψ(N-1)/N in stage 3, where
// the tied embedding (E parameters) is gathered once more in forward and once in backward; b
// bytes each (the collectives move the training type).
double formula_traffic(int stage, double psi, double tied, int n, ElementSizes e) {
  return (stage == 3 ? 3.0 * psi + 2.0 * tied : 2.0 * psi) * (n - 1) / n * e.b;
}

std::uint64_t max_over_ranks(const TrainResult& r, Category c, bool peak) {
  std::uint64_t m = 0;
  for (const RankFigures& f : r.final_ranks) m = std::max(m, (peak ? f.peak : f.current)[kDevice][cat_index(c)]);
  return m;
}

std::uint64_t sent_max(const TrainResult& r) {
  std::uint64_t m = 0;
  for (const RankFigures& f : r.final_ranks) {
    std::uint64_t s = 0;
    for (auto b : f.sent) s += b;
    m = std::max(m, s);
  }
  return m;
}

std::string kib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", bytes / 1024.0);
  return buf;
}

std::string pair(double measured, double formula) { return kib(measured) + "/" + kib(formula); }

void print_table(const std::vector<StageRun>& runs, const TrainConfig& c, int n, const std::string& backend, double tied) {
  const double psi = static_cast<double>(runs[0].result.num_parameters);
  std::printf("\nzero demo: GPT %s (Ψ = %.0f parameters), %d ranks (%s), %lld AdamW steps, global batch %d x %d tokens\n",
              c.model.shape.describe().c_str(), psi, n, backend.c_str(), static_cast<long long>(c.train_steps),
              c.train_batch_size, c.model.shape.seq_len);
  const ElementSizes e = element_sizes(c);
  std::printf("%s; per-rank KiB, measured by the memory ledger (max over ranks) / the paper's formula (%.0f + %.0f + %.0f bytes per\n"
              "parameter); sent = bytes a rank sent in one step, measured by the communicator / 2Ψ(N-1)/N or 3Ψ(N-1)/N elements of %.0f bytes\n\n",
              c.fp16 ? "fp16 mixed precision" : c.bf16 ? "bf16 mixed precision" : "fp32", e.b, e.b, e.k, e.b);
  std::printf("%-11s %15s %15s %15s %15s %9s %9s %15s %15s %8s %10s %9s  %s\n", "stage", "params", "grads", "optimizer",
              "model state", "gathered", "activ.", "host", "sent/step", "ms/step", "final loss", "val loss", "weights sha256");
  for (const StageRun& run : runs) {
    const TrainResult& r = run.result;
    const Formula f = formula_model_state(run, psi, n, e);
    const double p = max_over_ranks(r, Category::kParameters, false), g = max_over_ranks(r, Category::kGradients, false),
                 o = max_over_ranks(r, Category::kOptimizerState, false);
    std::uint64_t state = 0;
    for (const RankFigures& rf : r.final_ranks) {
      state = std::max(state, rf.current[kDevice][0] + rf.current[kDevice][1] + rf.current[kDevice][2]);
    }
    std::uint64_t host = 0;
    for (const RankFigures& rf : r.final_ranks) host = std::max(host, rf.total_current[static_cast<int>(Tier::kHost)]);
    const double host_formula = run.offload_optimizer ? 16 * psi / n : 0.0;
    std::printf("%-11s %15s %15s %15s %15s %9s %9s %15s %15s %8.1f %10.4f %9.4f  %.16s\n", run.label().c_str(), pair(p, f.params).c_str(),
                pair(g, f.grads).c_str(), pair(o, f.optim).c_str(), pair(static_cast<double>(state), f.total()).c_str(),
                kib(max_over_ranks(r, Category::kGatheredParameters, true)).c_str(),
                kib(max_over_ranks(r, Category::kActivations, true)).c_str(), pair(static_cast<double>(host), host_formula).c_str(),
                pair(static_cast<double>(sent_max(r)), formula_traffic(run.stage, psi, tied, n, e)).c_str(),
                r.mean_step_seconds * 1e3, r.losses.back(), r.final_val_loss, r.weights_sha256.c_str());
  }
  std::printf("\ngathered = stage 3's peak of whole units gathered for compute; activ. = peak activations (both per rank,\n"
              "not model state); host = offloaded state on the host tier (formula 16Ψ/N). Stage 3's formula counts the tied embedding (%.0f parameters) gathered twice more per step.\n"
              "Measured figures include padding (at most N-1 elements per unit) and the 8(N-1)-byte gradient-norm gather%s.\n",
              tied, c.fp16 ? " and fp16's (N-1)-byte overflow vote" : "");
}

std::string svg_for(const std::vector<StageRun>& runs, const std::string& title) {
  std::vector<MemoryBar> bars;
  std::vector<LossCurve> curves;
  for (const StageRun& run : runs) {
    const TrainResult& r = run.result;
    MemoryBar bar{run.label(), {}};
    for (const RankFigures& f : r.final_ranks)
      bar.host_bytes = std::max(bar.host_bytes, static_cast<double>(f.total_current[static_cast<int>(Tier::kHost)]));
    for (Category c : {Category::kParameters, Category::kGradients, Category::kOptimizerState})
      bar.parts.emplace_back(category_name(c), static_cast<double>(max_over_ranks(r, c, false)));
    for (Category c : {Category::kGatheredParameters, Category::kCommBuffers, Category::kActivations})
      bar.parts.emplace_back(cat(category_name(c), " (peak)"), static_cast<double>(max_over_ranks(r, c, true)));
    bars.push_back(bar);
    curves.push_back({cat("stage ", run.label()), r.losses});
    if (&run != &runs.front() && r.losses == runs.front().result.losses) curves.back().label += " (same)";
  }
  return render_memory_and_loss_svg(title, bars, curves);
}

nlohmann::json usage_json(const TrainResult& r, int tier, bool peak) {
  nlohmann::json rank0, max_over;
  for (int c = 0; c < kNumCategories; ++c) {
    std::uint64_t m = 0;
    for (const RankFigures& f : r.final_ranks) m = std::max(m, (peak ? f.peak : f.current)[tier][c]);
    rank0[category_name(static_cast<Category>(c))] = (peak ? r.final_ranks[0].peak : r.final_ranks[0].current)[tier][c];
    max_over[category_name(static_cast<Category>(c))] = m;
  }
  return {{"rank0", rank0}, {"max_over_ranks", max_over}};
}

nlohmann::json run_json(const StageRun& run, int n, double tied, ElementSizes e) {
  const TrainResult& r = run.result;
  const double psi = static_cast<double>(r.num_parameters);
  nlohmann::json memory;
  for (int t = 0; t < kNumTiers; ++t)
    memory[tier_name(static_cast<Tier>(t))] = {{"current", usage_json(r, t, false)}, {"peak", usage_json(r, t, true)}};
  nlohmann::json by_kind;
  for (int k = 0; k < kNumCollectives; ++k) {
    std::uint64_t m = 0;
    for (const RankFigures& f : r.final_ranks) m = std::max(m, f.sent[k]);
    by_kind[collective_name(static_cast<Collective>(k))] = m;
  }
  std::uint64_t state = 0;
  for (const RankFigures& f : r.final_ranks) state = std::max(state, f.current[kDevice][0] + f.current[kDevice][1] + f.current[kDevice][2]);
  const Formula f = formula_model_state(run, psi, n, e);
  return {{"stage", run.stage},
          {"offload_optimizer", run.offload_optimizer},
          {"offload_param", run.offload_param},
          {"ranks", n},
          {"psi", r.num_parameters},
          {"memory_bytes", memory},
          {"model_state_bytes", {{"measured_max_over_ranks", state}, {"formula", f.total()},
                                 {"formula_by_category", {{"parameters", f.params}, {"gradients", f.grads}, {"optimizer_state", f.optim}}}}},
          {"traffic_bytes_per_step", {{"measured_max_over_ranks", sent_max(r)}, {"formula", formula_traffic(run.stage, psi, tied, n, e)},
                                      {"sent_by_collective", by_kind}}},
          {"step_seconds", r.mean_step_seconds},
          {"tokens_per_second", r.tokens_per_second},
          {"loss_per_step", r.losses},
          {"final_loss", r.losses.back()},
          {"validation_loss", {{"first", r.first_val_loss}, {"final", r.final_val_loss}}},
          {"weights_sha256", r.weights_sha256}};
}

TrainConfig demo_config(const Flags& flags, int world_size) {
  const int micro = static_cast<int>(flags.get_int("micro-batch", 1, 4096));
  nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", micro},
      {"gradient_accumulation_steps", 1},
      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 3e-3}, {"betas", {0.9, 0.95}}, {"weight_decay", 0.1}}}}},
      {"scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_min_lr", 0}, {"warmup_max_lr", 3e-3}, {"warmup_num_steps", 10}, {"warmup_type", "linear"}}}}},
      {"gradient_clipping", 1.0},
      {"zero_optimization", {{"stage", 0}}},
      {"train_steps", flags.get_int("steps", 1, 1000000)},
      {"model", {{"type", "gpt"}, {"vocab_size", 256}, {"n_ctx", 64}, {"n_embd", flags.get_int("n-embd", 8, 4096)},
                 {"n_layer", flags.get_int("n-layer", 1, 256)}, {"n_head", 4},
                 {"checkpoint_activations", flags.has("activation-checkpointing")}}},
      {"data", {{"val_fraction", 0.05}}}};
  const std::string dtype = flags.get("dtype");
  if (dtype == "bf16" || dtype == "fp16") j[dtype] = {{"enabled", true}};
  else if (dtype != "fp32") throw ConfigError(cat("[cli] --dtype '", dtype, "': use fp32, bf16 or fp16"));
  return parse_config(j, world_size);
}

}  // namespace

int demo_main(const std::vector<std::string>& args) {
  Flags flags("zero demo",
              {{"ranks", "ranks to run on (in-process threads; under mpirun: the job's size)", true, "4"},
               {"comm", "backend: threads, mpi, or auto (mpi under mpirun, else threads)", true, "auto"},
               {"steps", "AdamW steps per run", true, "100"},
               {"micro-batch", "sequences per rank per step", true, "4"},
               {"n-embd", "GPT width C", true, "128"},
               {"n-layer", "GPT blocks L", true, "4"},
               {"data", "text to train on", true, "the Jargon File (Debian's jargon-text)"},
               {"dtype", "fp32, or bf16 / fp16 mixed precision (16-bit parameters, gradients and collectives)", true, "fp32"},
               {"activation-checkpointing", "every run checkpoints each GPT block (keeps its input, recomputes it in backward)", false, ""},
               {"json", "also write the results as JSON to this file", true, ""},
               {"svg", "write the memory-and-loss chart to this file", true, "zero-demo.svg"}},
              args);
  if (flags.help()) {
    std::printf("Trains the same GPT under ZeRO stages 0-3 and prints measured memory and traffic per rank.\n\n%s",
                flags.usage().c_str());
    return 0;
  }
  const std::string json_path = flags.get("json"), svg_path = flags.get("svg");
  const auto options = [&](int world_size) {
    TrainOptions o;
    o.config = demo_config(flags, world_size);
    o.data_path = flags.has("data") ? flags.get("data") : data::default_text_path();
    return o;
  };
  // The flags, the data and the output paths, checked once before any rank starts.
  const PlannedWorld world = planned_world(flags, false);
  const TrainOptions checked = options(world.size);
  check_train_options(checked, world.size, world.backend);
  const std::vector<NamedPath> inputs = {{"the data file", checked.data_path}};
  check_output_paths({{"--svg", svg_path}, {"--json", json_path}}, inputs);
  return run_ranks(flags, [&](Communicator& comm, Ledger& ledger) {
    TrainOptions o = options(comm.size());
    o.ledger = &ledger;
    std::vector<StageRun> runs = {{0}, {1}, {2}, {3}, {2, true, false}, {3, true, true}};
    for (StageRun& run : runs) {
      o.config.zero.stage = run.stage;
      o.config.zero.offload_optimizer.device = run.offload_optimizer ? OffloadDevice::cpu : OffloadDevice::none;
      o.config.zero.offload_param.device = run.offload_param ? OffloadDevice::cpu : OffloadDevice::none;
      o.sample_chars = &run == &runs.back() ? 200 : 0;
      if (comm.rank() == 0) std::printf("training under stage %s ...\n", run.label().c_str()), std::fflush(stdout);
      run.result = train(o, comm);
    }
    if (comm.rank() != 0) return 0;
    const GptShape& s = o.config.model.shape;
    const double tied = static_cast<double>(s.vocab_size + s.seq_len) * s.channels;  // the embedding unit
    print_table(runs, o.config, comm.size(), comm.backend(), tied);
    bool identical = true;
    for (const StageRun& r : runs) identical = identical && r.result.weights_sha256 == runs[0].result.weights_sha256;
    const std::string title = cat("zero demo: per-rank memory by category and training loss, GPT ", s.describe(), ", ",
                                  comm.size(), " ranks");
    write_output_file({"--svg", svg_path}, svg_for(runs, title), inputs);
    std::printf("wrote %s\n", svg_path.c_str());
    if (!json_path.empty()) {
      nlohmann::json j = {{"model", {{"type", "gpt"}, {"shape", s.describe()}}}, {"steps", o.config.train_steps},
                          {"global_batch", o.config.train_batch_size}, {"backend", comm.backend()},
                          {"weights_identical_across_stages", identical}, {"runs", nlohmann::json::array()}};
      for (const StageRun& r : runs) j["runs"].push_back(run_json(r, comm.size(), tied, element_sizes(o.config)));
      write_output_file({"--json", json_path}, j.dump(2) + "\n", inputs);
      std::printf("wrote %s\n", json_path.c_str());
    }
    if (!runs.back().result.sample.empty()) std::printf("\nsample (stage 3+opt+param):\n%s\n\n", runs.back().result.sample.c_str());
    if (!identical) {
      std::printf("ERROR: the stages ended with different weights; they must be bit-identical\n");
      return 1;
    }
    std::printf("final weights bit-identical across stages 0-3 and offload (sha256 %s)\n", runs[0].result.weights_sha256.c_str());
    return 0;
  });
}

}  // namespace zero::cli
