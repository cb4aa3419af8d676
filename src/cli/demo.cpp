#include "cli/demo.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/flags.h"
#include "cli/launch.h"
#include "common/error.h"
#include "common/sha256.h"
#include "engine/engine.h"
#include "model/mlp.h"

namespace zero::cli {
namespace {

// What one rank measured in one run; plain data, gathered to rank 0 as bytes.
struct RankStats {
  std::uint64_t current[kNumTiers][kNumCategories];
  std::uint64_t peak[kNumTiers][kNumCategories];
  std::uint64_t total_peak[kNumTiers];
  std::uint64_t sent[kNumCollectives];
  std::uint64_t received[kNumCollectives];
  double step_seconds;  // mean over the steps after the first
  float final_loss;
};

struct StageRun {
  int stage = 0;
  std::vector<RankStats> ranks;  // (world size), on rank 0 only
  std::vector<float> mean_loss;  // per step, mean over ranks
  std::string sha256;            // of the final whole weights
};

struct DemoSetup {
  MlpShape shape{{128, 512, 512, 512, 128}, false};
  int steps = 20;
  int global_batch = 32;
  std::uint64_t seed = 1234;
};

// The paper's per-rank model-state bytes with fp32 Adam (4 + 4 + 8 bytes per parameter).
double formula_model_state(int stage, double psi, int n) {
  switch (stage) {
    case 0: return 16 * psi;
    case 1: return 8 * psi + 8 * psi / n;
    case 2: return 4 * psi + 12 * psi / n;
    default: return 16 * psi / n;
  }
}

// Bytes each rank sends per step: 2Ψ(N-1)/N floats in stages 0-2, 3Ψ(N-1)/N in stage 3.
double formula_traffic(int stage, double psi, int n) { return (stage == 3 ? 3.0 : 2.0) * psi * (n - 1) / n * 4; }

std::uint64_t model_state(const RankStats& s) {
  const int d = static_cast<int>(Tier::kDevice);
  return s.current[d][static_cast<int>(Category::kParameters)] + s.current[d][static_cast<int>(Category::kGradients)] +
         s.current[d][static_cast<int>(Category::kOptimizerState)];
}

std::uint64_t total_sent(const RankStats& s) {
  std::uint64_t t = 0;
  for (auto b : s.sent) t += b;
  return t;
}

StageRun run_stage(int stage, const DemoSetup& setup, Communicator& comm, std::size_t* psi) {
  Ledger ledger;
  Mlp mlp(setup.shape);
  EngineConfig config;
  config.stage = stage;
  config.seed = setup.seed;
  config.adam.lr = 3e-3f;
  config.adam.weight_decay = 0.01f;
  Engine engine(config, mlp, comm, ledger);
  *psi = engine.layout().numel();

  const int n = comm.size();
  if (setup.global_batch % n != 0) {
    throw ConfigError(cat("[demo] the global batch of ", setup.global_batch, " rows does not split over ", n,
                          " ranks: use --batch with a multiple of ", n));
  }
  const int rows = setup.global_batch / n;
  std::vector<float> losses(setup.steps);  // this rank's, per step
  double seconds = 0;
  for (int s = 0; s < setup.steps; ++s) {
    mlp.set_batch(mlp_synthetic_batch(setup.shape, setup.seed, s, comm.rank() * rows, rows));
    const auto t0 = std::chrono::steady_clock::now();
    losses[s] = engine.train_step();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0 || setup.steps == 1) seconds += dt;
  }

  RankStats mine{};
  for (int t = 0; t < kNumTiers; ++t) {
    const TierUsage u = ledger.usage(static_cast<Tier>(t));
    for (int c = 0; c < kNumCategories; ++c) {
      mine.current[t][c] = u.current[c];
      mine.peak[t][c] = u.peak[c];
    }
    mine.total_peak[t] = u.total_peak;
  }
  const Traffic& traffic = engine.last_step_traffic();
  for (int k = 0; k < kNumCollectives; ++k) {
    mine.sent[k] = traffic.sent[k];
    mine.received[k] = traffic.received[k];
  }
  mine.step_seconds = seconds / std::max(1, setup.steps - 1);
  mine.final_loss = losses.back();

  const std::vector<float> weights = engine.full_parameters();  // a collective in stage 3
  StageRun run;
  run.stage = stage;
  run.ranks.resize(n);
  comm.all_gather_bytes(&mine, sizeof mine, run.ranks.data());
  std::vector<float> all_losses(static_cast<std::size_t>(n) * setup.steps);
  comm.all_gather_bytes(losses.data(), losses.size() * sizeof(float), all_losses.data());
  for (int s = 0; s < setup.steps; ++s) {
    double sum = 0;
    for (int r = 0; r < n; ++r) sum += all_losses[static_cast<std::size_t>(r) * setup.steps + s];
    run.mean_loss.push_back(static_cast<float>(sum / n));
  }
  run.sha256 = sha256_hex(weights.data(), weights.size() * sizeof(float));
  return run;
}

std::string kib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / 1024.0);
  return buf;
}

void print_table(const std::vector<StageRun>& runs, const DemoSetup& setup, std::size_t psi, int n,
                 const std::string& backend) {
  std::string widths;
  for (int w : setup.shape.widths) widths += (widths.empty() ? "" : "-") + std::to_string(w);
  std::printf("\nzero demo: MLP %s, Ψ = %zu parameters, %d ranks (%s), %d AdamW steps, global batch %d\n",
              widths.c_str(), psi, n, backend.c_str(), setup.steps, setup.global_batch);
  std::printf("per-rank bytes measured by the memory ledger (max over ranks, KiB) beside the paper's formula;\n"
              "traffic = bytes each rank sent in one step, measured by the communicator, beside 2Ψ(N-1)/N or 3Ψ(N-1)/N floats\n\n");
  std::printf("%-5s %10s %10s %10s %12s %12s %10s %12s %12s %9s %11s  %s\n", "stage", "params", "grads", "optim",
              "model state", "formula", "gathered", "traffic", "formula", "step ms", "final loss", "weights sha256");
  const int d = static_cast<int>(Tier::kDevice);
  for (const StageRun& run : runs) {
    std::uint64_t p = 0, g = 0, o = 0, ms = 0, gathered = 0, sent = 0;
    double step_ms = 0;
    for (const RankStats& r : run.ranks) {
      p = std::max(p, r.current[d][static_cast<int>(Category::kParameters)]);
      g = std::max(g, r.current[d][static_cast<int>(Category::kGradients)]);
      o = std::max(o, r.current[d][static_cast<int>(Category::kOptimizerState)]);
      ms = std::max(ms, model_state(r));
      gathered = std::max(gathered, r.peak[d][static_cast<int>(Category::kGatheredParameters)]);
      sent = std::max(sent, total_sent(r));
      step_ms = std::max(step_ms, r.step_seconds * 1e3);
    }
    std::printf("%-5d %10s %10s %10s %12s %12s %10s %12s %12s %9.1f %11.6f  %.16s\n", run.stage, kib(p).c_str(),
                kib(g).c_str(), kib(o).c_str(), kib(ms).c_str(), kib(formula_model_state(run.stage, psi, n)).c_str(),
                kib(gathered).c_str(), kib(sent).c_str(), kib(formula_traffic(run.stage, psi, n)).c_str(), step_ms,
                run.mean_loss.back(), run.sha256.c_str());
  }
  std::printf("\ngathered = stage 3's peak of whole units gathered for compute (its own category, not model state).\n");
}

nlohmann::json usage_json(const std::vector<RankStats>& ranks, bool peak, int tier) {
  nlohmann::json rank0, max_over;
  for (int c = 0; c < kNumCategories; ++c) {
    std::uint64_t m = 0;
    for (const RankStats& r : ranks) m = std::max(m, peak ? r.peak[tier][c] : r.current[tier][c]);
    const std::uint64_t first = peak ? ranks[0].peak[tier][c] : ranks[0].current[tier][c];
    rank0[category_name(static_cast<Category>(c))] = first;
    max_over[category_name(static_cast<Category>(c))] = m;
  }
  return {{"rank0", rank0}, {"max_over_ranks", max_over}};
}

nlohmann::json to_json(const StageRun& run, std::size_t psi, int n) {
  nlohmann::json memory;
  for (int t = 0; t < kNumTiers; ++t) {
    memory[tier_name(static_cast<Tier>(t))] = {{"current", usage_json(run.ranks, false, t)},
                                               {"peak", usage_json(run.ranks, true, t)}};
  }
  std::uint64_t ms = 0, sent = 0;
  nlohmann::json by_kind;
  for (int k = 0; k < kNumCollectives; ++k) {
    std::uint64_t m = 0;
    for (const RankStats& r : run.ranks) m = std::max(m, r.sent[k]);
    by_kind[collective_name(static_cast<Collective>(k))] = m;
  }
  for (const RankStats& r : run.ranks) {
    ms = std::max(ms, model_state(r));
    sent = std::max(sent, total_sent(r));
  }
  return {{"stage", run.stage},
          {"ranks", n},
          {"psi", psi},
          {"memory_bytes", memory},
          {"model_state_bytes", {{"measured_max_over_ranks", ms}, {"formula", formula_model_state(run.stage, psi, n)}}},
          {"traffic_bytes_per_step",
           {{"measured_max_over_ranks", sent}, {"formula", formula_traffic(run.stage, psi, n)}, {"sent_by_collective", by_kind}}},
          {"step_seconds", run.ranks[0].step_seconds},
          {"loss_per_step", run.mean_loss},
          {"final_loss", run.mean_loss.back()},
          {"weights_sha256", run.sha256}};
}

// Writes next to the target and renames, so a reader never sees half a file.
void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".partial";
  {
    std::ofstream out(tmp);
    if (!out) throw Error(cat("[demo] cannot write ", path, ": check the directory exists and is writable"));
    out << text;
    if (!out.flush()) throw Error(cat("[demo] writing ", path, " failed (disk full?)"));
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

int demo_main(const std::vector<std::string>& args) {
  Flags flags("zero demo",
              {{"ranks", "ranks to run on (in-process threads; under mpirun: the job's size)", true, "4"},
               {"comm", "backend: threads, mpi, or auto (mpi under mpirun, else threads)", true, "auto"},
               {"steps", "AdamW steps per stage", true, "20"},
               {"batch", "global batch (rows per step, split over the ranks)", true, "32"},
               {"json", "also write the results as JSON to this file", true, ""}},
              args);
  if (flags.help()) {
    std::printf("Trains the same MLP under ZeRO stages 0-3 and prints measured memory and traffic.\n\n%s",
                flags.usage().c_str());
    return 0;
  }
  DemoSetup setup;
  setup.steps = static_cast<int>(flags.get_int("steps", 1, 100000));
  setup.global_batch = static_cast<int>(flags.get_int("batch", 1, 1 << 20));
  const std::string json_path = flags.get("json");

  return run_ranks(flags, [&](Communicator& comm) {
    std::size_t psi = 0;
    std::vector<StageRun> runs;
    for (int stage = 0; stage <= 3; ++stage) runs.push_back(run_stage(stage, setup, comm, &psi));
    if (comm.rank() != 0) return 0;
    print_table(runs, setup, psi, comm.size(), comm.backend());
    bool identical = true;
    for (const StageRun& r : runs) identical = identical && r.sha256 == runs[0].sha256;
    if (!json_path.empty()) {
      nlohmann::json j = {{"model", "mlp"}, {"steps", setup.steps}, {"global_batch", setup.global_batch},
                          {"backend", comm.backend()}, {"weights_identical_across_stages", identical}, {"runs", nlohmann::json::array()}};
      for (const StageRun& r : runs) j["runs"].push_back(to_json(r, psi, comm.size()));
      write_file_atomically(json_path, j.dump(2) + "\n");
      std::printf("wrote %s\n", json_path.c_str());
    }
    if (!identical) {
      std::printf("ERROR: the stages ended with different weights; they must be bit-identical\n");
      return 1;
    }
    std::printf("final weights bit-identical across stages 0-3 (sha256 %s)\n", runs[0].sha256.c_str());
    return 0;
  });
}

}  // namespace zero::cli
