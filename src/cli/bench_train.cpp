#include "cli/bench_train.h"

#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/flags.h"
#include "cli/launch.h"
#include "common/error.h"
#include "engine/engine.h"
#include "model/gpt.h"
#include "partition/init.h"

namespace zero::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The two benchmark shapes: GPT-2-style with byte vocabulary (V = 256), context T = seq_len.
//   10m: C=384 L=6  H=6   -> 10.8M parameters at T=256
//   50m: C=768 L=7  H=12  -> 50.0M parameters at T=256
// bench/pytorch_ddp_gpt.py must list the same shapes.
struct BenchModel {
  const char* name;
  int channels, layers, heads;
};
constexpr BenchModel kModels[] = {{"10m", 384, 6, 6}, {"50m", 768, 7, 12}};

std::vector<FlagSpec> bench_flags() {
  return {{"model", "which shape: 10m, 50m or all", true, "all"},
          {"micro-batch", "sequences per rank per step", true, "4"},
          {"seq-len", "tokens per sequence (also the context length T)", true, "256"},
          {"warmup", "steps run before timing", true, "2"},
          {"steps", "timed steps", true, "6"},
          {"ranks", "data-parallel ranks: launches `mpirun -np N` itself (or N thread ranks with --comm threads)", true, "2"},
          {"comm", "backend: auto (mpi under mpirun, else launch mpirun), mpi, threads", true, "auto"},
          {"stage", "ZeRO stage 0-3", true, "0"},
          {"json", "also write the results as JSON to this file", true, ""}};
}

struct BenchResult {
  std::string model;
  GptShape shape;
  std::int64_t parameters = 0;
  double seconds = 0;              // the timed steps, barrier to barrier
  std::vector<double> step_ms;     // per timed step, max over ranks
  double compute_ms = 0;           // mean over timed steps of forward + backward (rank 0)
  double optimizer_ms = 0;         // mean over timed steps of Engine::step(): the rest of the
                                   // reduction, averaging, Adam, zeroing the gradients (rank 0)
  double tokens_per_second = 0;    // global tokens in the timed steps / seconds
  float first_loss = 0, last_loss = 0;  // rank 0's, first warm-up step and last timed step
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

BenchResult run_model(const BenchModel& bm, int B, int T, int warmup, int steps, int stage, Communicator& comm,
                      Ledger& ledger) {
  BenchResult r;
  r.model = bm.name;
  r.shape = GptShape{256, T, bm.channels, bm.layers, bm.heads};
  r.parameters = r.shape.num_parameters();
  EngineConfig config;
  config.stage = stage;
  config.adam = AdamConfig{3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, true};  // AdamW, as the PyTorch script
  Gpt gpt(r.shape, B, ledger);
  Engine engine(config, gpt, comm, ledger);
  std::vector<std::int32_t> in(static_cast<std::size_t>(B) * T), tgt(in.size());
  std::vector<double> local_ms;
  Clock::time_point start;
  for (int s = 0; s < warmup + steps; ++s) {
    if (s == warmup) {
      comm.barrier();
      start = Clock::now();
    }
    const auto t0 = Clock::now();
    fill_tokens(static_cast<std::uint64_t>(s), comm.rank(), 256, in, tgt);
    gpt.set_batch(in.data(), tgt.data());
    const float loss = engine.forward_backward(true);
    const auto t1 = Clock::now();
    engine.step();
    if (s == 0) r.first_loss = loss;
    r.last_loss = loss;
    if (s >= warmup) {
      const auto t2 = Clock::now();
      local_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t0).count());
      r.compute_ms += std::chrono::duration<double, std::milli>(t1 - t0).count() / steps;
      r.optimizer_ms += std::chrono::duration<double, std::milli>(t2 - t1).count() / steps;
    }
  }
  comm.barrier();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all(local_ms.size() * comm.size());
  comm.all_gather_bytes(local_ms.data(), local_ms.size() * sizeof(double), all.data());
  for (std::size_t i = 0; i < local_ms.size(); ++i) {
    double m = 0;
    for (int k = 0; k < comm.size(); ++k) m = std::max(m, all[k * local_ms.size() + i]);
    r.step_ms.push_back(m);
  }
  r.tokens_per_second = static_cast<double>(steps) * B * T * comm.size() / r.seconds;
  return r;
}

nlohmann::json to_json(const BenchResult& r) {
  const GptShape& s = r.shape;
  return {{"model", r.model}, {"parameters", r.parameters},
          {"shape", {{"vocab_size", s.vocab_size}, {"n_ctx", s.seq_len}, {"n_embd", s.channels}, {"n_layer", s.layers}, {"n_head", s.heads}}},
          {"seconds", r.seconds}, {"step_ms", r.step_ms}, {"tokens_per_second", r.tokens_per_second},
          {"compute_ms", r.compute_ms}, {"optimizer_ms", r.optimizer_ms}, {"first_loss", r.first_loss},
          {"last_loss", r.last_loss}};
}

}  // namespace

int bench_train_main(const std::vector<std::string>& args) {
  Flags flags("zero bench train", bench_flags(), args);
  if (flags.help()) {
    std::printf("Training speed (tokens/s) of a ~10M- and a ~50M-parameter GPT on synthetic tokens, ZeRO stage 0 on 2\n"
                "ranks by default; compare with PyTorch DDP: bench/compare_train.sh.\n\n%s", flags.usage().c_str());
    return 0;
  }
  const std::string which = flags.get("model");
  if (which != "all" && which != "10m" && which != "50m") {
    throw ConfigError(cat("[bench] --model must be 10m, 50m or all, not '", which, "'"));
  }
  if (wants_mpi_job(flags)) relaunch_under_mpirun(flags, {"bench", "train"}, args);
  const int B = static_cast<int>(flags.get_int("micro-batch", 1, 4096));
  const int T = static_cast<int>(flags.get_int("seq-len", 1, 65536));
  const int warmup = static_cast<int>(flags.get_int("warmup", 0, 1000));
  const int steps = static_cast<int>(flags.get_int("steps", 1, 100000));
  const int stage = static_cast<int>(flags.get_int("stage", 0, 3));
  const std::string json_path = flags.get("json");
  return run_ranks(flags, [&](Communicator& comm, Ledger& ledger) {
    nlohmann::json results = nlohmann::json::array();
    if (comm.rank() == 0) {
      std::printf("zero bench train: ZeRO stage %d, %d ranks (%s), %d OpenMP / %d OpenBLAS (%s) threads per rank, micro-batch %d x "
                  "T=%d per rank, AdamW fp32, synthetic tokens; %d warm-up + %d timed steps\n",
                  stage, comm.size(), comm.backend().c_str(), omp_get_max_threads(), openblas_get_num_threads(),
                  openblas_get_corename(), B, T, warmup, steps);
    }
    for (const BenchModel& m : kModels) {
      if (which != "all" && which != m.name) continue;
      const BenchResult r = run_model(m, B, T, warmup, steps, stage, comm, ledger);
      if (comm.rank() != 0) continue;
      const double best = *std::min_element(r.step_ms.begin(), r.step_ms.end());
      std::printf("%-4s %s (%.1fM parameters): %9.0f tokens/s | %.0f ms/step (best %.0f; forward+backward %.0f, optimizer step "
                  "%.0f) | loss %.3f -> %.3f\n",
                  r.model.c_str(), r.shape.describe().c_str(), r.parameters / 1e6, r.tokens_per_second, r.seconds * 1e3 / steps,
                  best, r.compute_ms, r.optimizer_ms, r.first_loss, r.last_loss);
      std::fflush(stdout);
      results.push_back(to_json(r));
    }
    if (comm.rank() == 0 && !json_path.empty()) {
      const nlohmann::json j = {{"tool", "zero bench train"}, {"stage", stage}, {"ranks", comm.size()}, {"backend", comm.backend()},
                                {"omp_threads_per_rank", omp_get_max_threads()}, {"openblas_threads_per_rank", openblas_get_num_threads()},
                                {"openblas_core", openblas_get_corename()},
                                {"micro_batch", B}, {"seq_len", T}, {"warmup", warmup}, {"steps", steps}, {"results", results}};
      std::ofstream out(json_path + ".partial");
      out << j.dump(2) << "\n";
      if (!out) throw Error(cat("[bench] cannot write ", json_path, ": check the directory exists and is writable"));
      out.close();
      std::filesystem::rename(json_path + ".partial", json_path);
    }
    return 0;
  });
}

}  // namespace zero::cli
