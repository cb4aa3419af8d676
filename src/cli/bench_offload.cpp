#include "cli/bench_offload.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "backends/registry.h"
#include "cli/flags.h"
#include "cli/launch.h"
#include "common/error.h"
#include "common/output_file.h"
#include "common/trace.h"
#include "data/load.h"
#include "train/trainer.h"

namespace zero::cli {
namespace {

struct Variant {
  const char* name;
  bool offload;
  bool delayed;
  bool zenflow = false;  // DeepSpeed's tutorial ZenFlow: topk_ratio 0.05, columns chosen once, the CPU every 4 steps, overlapped
};

double mean_overlap(const TrainResult& r, int ranks) {
  double sum = 0;
  int n = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    const double f = overlap_fraction(r.trace, rank, Lane::kOptimizer, Lane::kCompute);
    if (f >= 0) sum += f, ++n;
  }
  return n ? sum / n : -1.0;
}

}  // namespace

std::vector<FlagSpec> bench_offload_flags() {
  return {{"ranks", "ranks (threads in this process, or the mpirun job's size)", true, "2"},
          {"comm", "threads, mpi or auto", true, "auto"},
          {"stage", "ZeRO stage 1-3", true, "2"},
          {"steps", "optimizer steps per variant", true, "60"},
          {"warmup", "ordinary steps before the delayed update starts", true, "10"},
          {"n-embd", "GPT width", true, "192"},
          {"n-layer", "GPT blocks", true, "6"},
          {"micro-batch", "sequences per rank per step", true, "4"},
          {"zenflow", "also time ZenFlow (DeepSpeed's tutorial settings: topk_ratio 0.05, update_interval 4, overlap_step); with --device nvme, on both tiers", false, ""},
          {"json", "also write the figures as JSON", true, ""},
          {"device", cat(backend_names(), ": a device other than ", default_device(), " first measures the host<->device link's copy bandwidth; "
                         "nvme: host offload against the optimizer state on the NVMe tier (offload_optimizer.device \"nvme\")"), true, default_device()},
          {"nvme-path", "with --device nvme: the folder of the swap files (nvme_path); default: a new folder under /tmp, removed after", true, ""},
          {"rounds", "with --device nvme: runs of each, alternated (host, nvme, host, ...); the mean counts", true, "3"}};
}

nlohmann::json bench_offload_config(const Flags& flags) {
  return {{"train_micro_batch_size_per_gpu", flags.get_int("micro-batch", 1, 4096)},
          {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 2e-3}, {"betas", {0.9, 0.95}}, {"weight_decay", 0.1}}}}},
          {"zero_optimization", {{"stage", flags.get_int("stage", 1, 3)}}},
          {"train_steps", flags.get_int("steps", 2, 100000)},
          {"model", {{"type", "gpt"}, {"vocab_size", 256}, {"n_ctx", 64}, {"n_embd", flags.get_int("n-embd", 8, 4096)},
                     {"n_layer", flags.get_int("n-layer", 1, 256)}, {"n_head", 4}}}};
}

nlohmann::json bench_zenflow_section() {
  return {{"topk_ratio", 0.05}, {"select_strategy", "auto"}, {"update_interval", 4}, {"overlap_step", true}};
}

int bench_offload_main(const std::vector<std::string>& args) {
  Flags flags("zero bench offload", bench_offload_flags(), args);
  if (flags.help()) {
    std::printf("Step time with and without offload, the delayed update and ZenFlow, on the GPT; with --device nvme,\n"
                "host offload against the NVMe tier.\n\n%s", flags.usage().c_str());
    return 0;
  }
  if (flags.get("device") == "nvme") return bench_offload_nvme(flags);
  if (flags.has("nvme-path") || flags.has("rounds")) throw ConfigError("[bench] --nvme-path and --rounds go with --device nvme");
  if (flags.get("device") != default_device()) {
    print_link_bandwidth(flags.get("device"));
    // Only the link is measured on the device here; the step-time variants run on the cpu device
    // (`zero bench train --device cuda` times the GPT's steps on a GPU).
    std::printf("\n(the step-time variants run on the cpu device: without --device)\n");
    return 0;
  }
  const Variant variants[] = {{"no offload", false, false}, {"offload", true, false}, {"offload + delayed update", true, true},
                              {"offload + ZenFlow", true, false, true}};
  check_output_paths({{"--json", flags.get("json")}}, {{"the data file", data::default_text_path()}});
  return run_ranks(flags, [&](Communicator& comm, Ledger& ledger) {
    const nlohmann::json base = bench_offload_config(flags);
    nlohmann::json out = nlohmann::json::array();
    std::vector<TrainResult> results;
    for (const Variant& v : variants) {
      if (v.zenflow && !flags.has("zenflow")) continue;
      nlohmann::json j = base;
      if (v.offload) j["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
      if (v.delayed) j["zero_optimization"]["offload_optimizer"]["delayed_update"] = {{"enabled", true}, {"warmup_steps", flags.get_int("warmup", 0, 1000000)}};
      if (v.zenflow) j["zero_optimization"]["zenflow"] = bench_zenflow_section();
      TrainOptions o;
      o.config = parse_config(j, comm.size());
      o.data_path = data::default_text_path();
      o.ledger = &ledger;
      o.trace = true;
      results.push_back(train(o, comm));
    }
    if (comm.rank() != 0) return 0;
    std::printf("\nzero bench offload: GPT %s, stage %lld, %d ranks (%s), %lld steps each, no clipping (so Adam may start during backward)\n\n",
                parse_config(base, comm.size()).model.shape.describe().c_str(), flags.get_int("stage", 1, 3), comm.size(),
                comm.backend().c_str(), flags.get_int("steps", 2, 100000));
    std::printf("%-26s %10s %12s %22s %16s\n", "variant", "ms/step", "tokens/s", "CPU Adam overlapped", "final val loss");
    for (std::size_t i = 0; i < results.size(); ++i) {
      const TrainResult& r = results[i];
      const double overlap = mean_overlap(r, comm.size());
      std::printf("%-26s %10.1f %12.0f %21s %16.4f\n", variants[i].name, r.mean_step_seconds * 1e3, r.tokens_per_second,
                  overlap < 0 ? "-" : cat(static_cast<int>(overlap * 1000 + 0.5) / 10.0, "%").c_str(), r.final_val_loss);
      out.push_back({{"variant", variants[i].name}, {"step_seconds", r.mean_step_seconds}, {"tokens_per_second", r.tokens_per_second},
                     {"optimizer_overlap_fraction", overlap}, {"final_validation_loss", r.final_val_loss}});
    }
    const double ratio = results[2].final_val_loss / results[1].final_val_loss;
    std::printf("\ndelayed update: validation loss %.4f vs %.4f undelayed (%+.2f%%; within 2%% of the undelayed run: %s)\n",
                results[2].final_val_loss, results[1].final_val_loss, 100 * (ratio - 1), std::abs(ratio - 1) <= 0.02 ? "yes" : "no");
    std::printf("offload without the delayed update is bit-identical to no offload: %s\n",
                results[0].weights_sha256 == results[1].weights_sha256 ? "yes (same weights sha256)" : "NO");
    std::printf("On a CPU-only build the 'device' is this CPU too: compute, copies and the CPU optimizer share its cores,\n"
                "so offload can only cost time here; on a GPU build the same run overlaps the CPU step with GPU compute.\n");
    if (!flags.get("json").empty()) write_output_file({"--json", flags.get("json")}, out.dump(2) + "\n");
    return 0;
  });
}

}  // namespace zero::cli
