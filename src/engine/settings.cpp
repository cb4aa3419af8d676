#include "engine/settings.h"

#include <cmath>

#include "common/error.h"
#include "engine/zenflow.h"

namespace zero {
namespace {

constexpr const char* kZero = "zero_optimization.";

// The NVMe tier's settings. The swap folder itself (exists, writable) is checked where the run
// starts (io::check_nvme_path), before the ranks.
void nvme_problems(const EngineSettings& s, std::vector<SettingProblem>& out) {
  const NvmeOptions& n = s.offload.nvme;
  const std::string opt = cat(kZero, "offload_optimizer");
  if (n.path.empty()) out.push_back({opt + ".nvme_path", "is missing: device \"nvme\" swaps to files in this folder; name a folder on a fast local disk"});
  if (n.buffer_count < 1) out.push_back({opt + ".buffer_count", cat("must be >= 1, not ", n.buffer_count)});
  if (n.sub_group_size < 1) out.push_back({cat(kZero, "sub_group_size"), "must be >= 1 element"});
  if (n.block_size < 1) out.push_back({"aio.block_size", "must be >= 1 byte"});
  if (n.queue_depth < 1) out.push_back({"aio.queue_depth", cat("must be >= 1, not ", n.queue_depth)});
  if (s.offload.delayed_update) {
    out.push_back({opt + ".delayed_update", "with device \"nvme\" is not supported (the delayed update keeps a step's Adam running "
                                            "behind the next step, over state this tier swaps through its buffers): use device "
                                            "\"cpu\", or turn delayed_update off"});
  }
  if (s.optimizer == OptimizerKind::kLamb) {
    out.push_back({"optimizer.type", "= Lamb with offload_optimizer.device \"nvme\" is not supported yet (Lamb reads every part's "
                                     "state twice around a collective): use Adam/AdamW, or device \"cpu\""});
  }
}

// offload_param.device "nvme". A buffer_size smaller than a unit's slice is found where the
// layout is known (the stage's ParamHome). The updated parameters reach the disk from the CPU
// optimizer (host offload, or the NVMe optimizer's stream of sub-groups), so the optimizer must
// be offloaded too.
void nvme_param_problems(const EngineSettings& s, std::vector<SettingProblem>& out) {
  const NvmeParamOptions& n = s.offload.param_nvme;
  const std::string key = cat(kZero, "offload_param");
  if (n.path.empty()) out.push_back({key + ".nvme_path", "is missing: device \"nvme\" swaps to files in this folder; name a folder on a fast local disk"});
  if (n.buffer_count < 1) out.push_back({key + ".buffer_count", cat("must be >= 1, not ", n.buffer_count)});
  if (n.buffer_size < 1) out.push_back({key + ".buffer_size", "must be >= 1 element"});
  if (s.stage == 3 && !s.offload.optimizer) {
    out.push_back({key + ".device", "= \"nvme\" needs offload_optimizer.device \"cpu\" or \"nvme\" too, for now (the updated "
                                    "parameters are written to the swap file by the optimizer on the CPU; from the device's that path "
                                    "does not exist yet): set offload_optimizer.device, or offload_param.device to \"cpu\""});
  }
}

void offload_problems(const EngineSettings& s, std::vector<SettingProblem>& out) {
  const OffloadOptions& o = s.offload;
  const std::string opt = cat(kZero, "offload_optimizer");
  if (o.optimizer && s.stage == 0) {
    out.push_back({opt, "offloads the optimizer state, which needs ZeRO stage 1, 2 or 3 (stage 0 keeps no shard to offload): "
                        "set zero_optimization.stage to 1 or more, or turn offload off"});
  }
  if (o.params && s.stage != 3) {
    out.push_back({cat(kZero, "offload_param"), cat("offloads parameters, which only stage 3 shards; stage is ", s.stage,
                                                    ": set zero_optimization.stage to 3, or remove offload_param")});
  }
  // pin_memory page-locks the optimizer's host buffers; the stage-3 host shard is not pinned
  // (with or without offload_optimizer), so with offload_param alone it changes nothing.
  if (!o.optimizer && o.delayed_update) {
    out.push_back({opt + ".delayed_update", "is a setting of offload_optimizer: set offload_optimizer.device to \"cpu\" too"});
  }
  if (!o.optimizer && o.pin_memory && !o.params) {
    out.push_back({opt + ".pin_memory", "is a setting of offload: set offload_optimizer.device to \"cpu\" too, or remove it"});
  }
  if (o.delayed_update && o.params) {
    out.push_back({opt + ".delayed_update", "with offload_param is not supported yet (the CPU would update the parameter shards "
                                            "while the next step gathers them): use offload_optimizer alone"});
  }
  if (o.warmup_steps < 0) out.push_back({opt + ".delayed_update.warmup_steps", cat("must be >= 0, not ", o.warmup_steps)});
  if (o.optimizer_nvme) nvme_problems(s, out);
  if (o.params_nvme) nvme_param_problems(s, out);
}

void stage3_problems(const Stage3Options& s3, std::vector<SettingProblem>& out) {
  if (s3.prefetch_bucket < -1) {
    out.push_back({cat(kZero, "stage3_prefetch_bucket_size"), cat("must be >= 0 elements (0: no prefetch), not ", s3.prefetch_bucket)});
  }
  for (const auto& [key, value] : {std::pair<const char*, std::int64_t>{"stage3_max_live_parameters", s3.max_live},
                                   {"stage3_param_persistence_threshold", s3.persistence_threshold},
                                   {"stage3_max_reuse_distance", s3.max_reuse_distance}}) {
    if (value < 0) out.push_back({cat(kZero, key), cat("must be >= 0 elements, not ", value)});
  }
}

// 1-bit and 0/1 Adam compress the all-reduce of whole tensors, which only stage 0 holds whole on
// every rank; DeepSpeed refuses them with ZeRO too (AssertionError "1bit-Adam is not compatible
// with ZeRO", "0/1 Adam is not compatible with ZeRO").
void onebit_problems(const EngineSettings& s, std::vector<SettingProblem>& out) {
  const bool onebit = s.optimizer == OptimizerKind::kOneBitAdam, zero_one = s.optimizer == OptimizerKind::kZeroOneAdam;
  if (!onebit && !zero_one) return;
  if (s.stage != 0) {
    const char* name = onebit ? "OneBitAdam" : "ZeroOneAdam";
    const char* ds = onebit ? "1bit-Adam" : "0/1 Adam";
    out.push_back({"optimizer.type", cat("= ", name, " needs zero_optimization.stage 0, not ", s.stage, ": it all-reduces whole tensors, "
                                         "compressed, where ZeRO stages shard them (DeepSpeed refuses it with ZeRO too: \"", ds, " is not "
                                         "compatible with ZeRO\"); set the stage to 0, or use Adam/AdamW")});
  }
  if (onebit && s.onebit.freeze_step < 0) {
    out.push_back({"optimizer.params.freeze_step", cat("is ", s.onebit.freeze_step, "; it must be >= 0 (the steps of uncompressed Adam before the "
                                                       "variance is frozen)")});
  }
  if (!zero_one) return;
  const ZeroOneAdamConfig& z = s.zero_one;
  if (z.var_freeze_step < 0) out.push_back({"optimizer.params.var_freeze_step", cat("is ", z.var_freeze_step, "; it must be >= 0")});
  for (const auto& [key, value] : {std::pair<const char*, std::int64_t>{"var_update_scaler", z.var_update_scaler},
                                   {"local_step_scaler", z.local_step_scaler}, {"local_step_clipper", z.local_step_clipper}}) {
    if (value < 1) out.push_back({cat("optimizer.params.", key), cat("is ", value, "; it must be >= 1 (a count of steps)")});
  }
}

// ZeRO++'s weight options change how stage 3 gathers parameters. DeepSpeed reads them only in
// stage 3's parameter partitioning (zero.Init) and ignores them at stages 0-2; zero refuses them
// there rather than ignore them.
void zeropp_problems(const EngineSettings& s, std::vector<SettingProblem>& out) {
  if (s.hpz_partition_size < 1) {
    out.push_back({cat(kZero, "zero_hpz_partition_size"), cat("is ", s.hpz_partition_size, "; it must be >= 1 ranks (1: off; "
                                                                                            "usually the ranks per node)")});
  }
  const bool hpz = s.hpz_partition_size > 1;
  if (s.stage != 3) {
    if (s.quantized_weights) {
      out.push_back({cat(kZero, "zero_quantized_weights"), cat("quantises stage 3's parameter all-gathers, and stage ", s.stage,
                                                               " gathers no parameters per use (DeepSpeed reads the key only at stage 3): "
                                                               "set zero_optimization.stage to 3, or remove it")});
    }
    if (hpz) {
      out.push_back({cat(kZero, "zero_hpz_partition_size"), cat("keeps a secondary partition of stage 3's parameters, and stage ", s.stage,
                                                                " does not partition them (DeepSpeed reads the key only at stage 3): set "
                                                                "zero_optimization.stage to 3, or remove it")});
    }
  }
  if (s.quantized_weights && s.mics_shard_size > 0) {
    out.push_back({cat(kZero, "zero_quantized_weights"), "with mics_shard_size is not supported yet: keep one of the two"});
  }
  if (hpz && s.mics_shard_size > 0) {
    out.push_back({cat(kZero, "zero_hpz_partition_size"), "with mics_shard_size is not supported: hybrid sharding already gathers "
                                                          "inside its shard group; keep one of the two"});
  }
}

// DeepSpeed reads zero_quantized_gradients only in stage 3's optimizer (stage3.py) and ignores it
// at stages 0-2; zero refuses it there rather than ignore it.
void qgz_problems(const EngineSettings& s, std::vector<SettingProblem>& out) {
  if (!s.zero_quantized_gradients) return;
  if (s.stage != 3) {
    out.push_back({cat(kZero, "zero_quantized_gradients"), cat("quantises stage 3's gradient reduce-scatter (ZeRO++'s qgZ), and this run is "
                                                                "stage ", s.stage, " (DeepSpeed ignores the key below stage 3): set "
                                                                "zero_optimization.stage to 3, or remove zero_quantized_gradients")});
  }
  if (s.mics_shard_size > 0) {
    out.push_back({cat(kZero, "zero_quantized_gradients"), "with mics_shard_size is not supported: hybrid sharding already keeps the "
                                                           "reduce-scatter inside its groups and sends only the replicas' all-reduce "
                                                           "across; remove one of the two"});
  }
}

}  // namespace

std::vector<SettingProblem> settings_problems(const EngineSettings& s) {
  std::vector<SettingProblem> out;
  if (s.stage < 0 || s.stage > 3) {
    out.push_back({cat(kZero, "stage"), cat("is ", s.stage, "; ZeRO stages are 0-3 (0: data parallel, 1: + optimizer state sharded, "
                                                           "2: + gradients, 3: + parameters)")});
  }
  offload_problems(s, out);
  stage3_problems(s.stage3, out);
  if (s.precision.compute == Dtype::kF16 && s.precision.loss_scaler.dynamic() && s.offload.delayed_update) {
    out.push_back({"fp16.loss_scale", "= 0 (dynamic loss scaling) with the delayed update is not supported yet (an overflow found at "
                                      "step t+1 would come after step t's update was applied): use bf16, a static fp16.loss_scale, "
                                      "or turn delayed_update off"});
  }
  if (!(s.gradient_clipping >= 0.0f) || !std::isfinite(s.gradient_clipping)) {
    out.push_back({"gradient_clipping", cat("is ", s.gradient_clipping, "; it must be >= 0 (0 turns clipping off)")});
  }
  const double f = s.gradient_predivide_factor;
  if (!(f > 0.0) || !std::isfinite(f) || f > 3.4e38) {
    out.push_back({"gradient_predivide_factor", cat("is ", f, "; it must be a positive number (1 divides only once, after the sum)")});
  }
  if (s.mics_shard_size == 0 || s.mics_shard_size < -1) {
    out.push_back({cat(kZero, "mics_shard_size"), cat("is ", s.mics_shard_size, "; it must be a positive number of ranks (the shard "
                                                                               "group), or -1 to shard among all ranks")});
  }
  // DeepSpeed reads mics_shard_size only at stage 3 (MiCS_Init, MiCS_Optimizer) and ignores it
  // at stages 0-2; zero shards in groups at stages 1-3 and, at stage 0, where nothing is
  // sharded, refuses it rather than ignore it.
  if (s.mics_shard_size > 0 && s.stage == 0) {
    out.push_back({cat(kZero, "mics_shard_size"), "shards the state among groups of ranks, and stage 0 shards nothing: set "
                                                  "zero_optimization.stage to 1, 2 or 3, or remove mics_shard_size"});
  }
  qgz_problems(s, out);
  if (s.optimizer == OptimizerKind::kLamb && s.offload.delayed_update) {
    out.push_back({"optimizer.type", "= Lamb with the delayed update is not supported (Lamb's trust ratios need a collective in the "
                                     "middle of the update, which the delayed update runs in the background): turn delayed_update "
                                     "off, or use Adam/AdamW"});
  }
  onebit_problems(s, out);
  zeropp_problems(s, out);
  zenflow::problems(s, out);
  return out;
}

std::vector<SettingProblem> world_problems(const EngineSettings& s, int world_size) {
  std::vector<SettingProblem> out;
  if (s.mics_shard_size > 0 && world_size % s.mics_shard_size != 0) {
    out.push_back({cat(kZero, "mics_shard_size"), cat("is ", s.mics_shard_size, ", which does not divide the ", world_size,
                                                      " ranks into equal shard groups: use a divisor of ", world_size,
                                                      " (DeepSpeed asserts the same), or run on a multiple of ", s.mics_shard_size, " ranks")});
  }
  // hpZ's groups lie inside equal nodes, so H divides the world too (the nodes are checked where known: node_problems).
  if (s.hpz_partition_size > 1 && world_size % s.hpz_partition_size != 0) {
    out.push_back({cat(kZero, "zero_hpz_partition_size"), cat("is ", s.hpz_partition_size, ", which does not divide the ", world_size,
                                                              " ranks: it must divide the ranks of every node; use the ranks per node "
                                                              "or a divisor of them")});
  }
  return out;
}

std::vector<SettingProblem> node_problems(const EngineSettings& s, const std::vector<int>& ranks_on_each_node) {
  std::vector<SettingProblem> out;
  const int h = s.hpz_partition_size;
  if (h <= 1 || ranks_on_each_node.empty()) return out;
  const int per_node = ranks_on_each_node.front();
  for (int n : ranks_on_each_node) {
    if (n != per_node) {
      std::string sizes;
      for (int m : ranks_on_each_node) sizes += cat(sizes.empty() ? "" : ", ", m);
      out.push_back({cat(kZero, "zero_hpz_partition_size"), cat("needs the same number of ranks on every node, and the nodes have ",
                                                                sizes, ": start as many ranks on each node")});
      return out;
    }
  }
  if (per_node % h != 0) {
    out.push_back({cat(kZero, "zero_hpz_partition_size"), cat("is ", h, ", which does not divide the ", per_node, " ranks per node: "
                                                              "the secondary partition lies inside a node; use a divisor of ", per_node,
                                                              " (usually ", per_node, " itself)")});
  }
  return out;
}

int shard_group_size(const EngineSettings& s, int world_size) { return s.mics_shard_size > 0 ? s.mics_shard_size : world_size; }

namespace {

void throw_problems(const std::vector<SettingProblem>& problems, const std::string& component) {
  if (problems.empty()) return;
  if (problems.size() == 1) throw ConfigError(cat("[", component, "] ", problems[0].key, " ", problems[0].what));
  std::string msg = cat("[", component, "] ", problems.size(), " problems with the settings; fix them all:");
  for (std::size_t i = 0; i < problems.size(); ++i) msg += cat("\n  ", i + 1, ". ", problems[i].key, " ", problems[i].what);
  throw ConfigError(msg);
}

}  // namespace

void check_settings(const EngineSettings& settings, const std::string& component) {
  throw_problems(settings_problems(settings), component);
}

void check_world(const EngineSettings& settings, int world_size, const std::string& component) {
  throw_problems(world_problems(settings, world_size), component);
}

void check_nodes(const EngineSettings& settings, const std::vector<int>& ranks_on_each_node, const std::string& component) {
  throw_problems(node_problems(settings, ranks_on_each_node), component);
}

}  // namespace zero
