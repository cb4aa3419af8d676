#include "planner/planner.h"

#include <algorithm>

#include "common/error.h"
#include "model/gpt_activations.h"
#include "model/llama_activations.h"
#include "partition/layout.h"
#include "planner/activation_counts.h"
#include "planner/dry_run.h"

namespace zero {

const char* dtype_name(Dtype compute) { return compute == Dtype::kF32 ? "fp32" : "mixed"; }

Dtype parse_dtype(const std::string& text) {
  if (text == "fp32") return Dtype::kF32;
  if (text == "mixed" || text == "bf16") return Dtype::kBf16;
  if (text == "fp16") return Dtype::kF16;
  throw ConfigError(cat("[planner] unknown dtype '", text, "': use fp32, or mixed (bf16/fp16 parameters and gradients "
                        "with fp32 master parameters and Adam state)"));
}

ActivationBytesFn gpt_activation_hook(bool attention_scores) {
  return [attention_scores](const GptShape& shape, int micro_batch, const GptCheckpointing& ckpt) {
    return gpt::activation_plan_bytes(shape, micro_batch, ckpt, attention_scores);
  };
}

LlamaActivationBytesFn llama_model_activation_hook(bool attention_scores) {
  return [attention_scores](const LlamaShape& shape, int micro_batch, const GptCheckpointing& ckpt) {
    return llama::activation_plan_bytes(shape, micro_batch, ckpt, attention_scores);
  };
}

std::uint64_t TierBytes::total() const {
  std::uint64_t t = 0;
  for (auto b : bytes) t += b;
  return t;
}

std::uint64_t TierBytes::model_states() const {
  return (*this)[Category::kParameters] + (*this)[Category::kGradients] + (*this)[Category::kOptimizerState];
}

std::uint64_t StepTraffic::total_across() const {
  std::uint64_t t = 0;
  for (auto b : sent_across) t += b;
  return t;
}

std::uint64_t StepTraffic::total() const {
  std::uint64_t t = 0;
  for (auto b : sent) t += b;
  return t;
}

std::string plan_label(const EngineSettings& s) {
  return cat(s.stage, s.offload.optimizer_nvme ? "+nvme" : s.offload.optimizer ? "+opt" : "", s.offload.params_nvme ? "+nvme-param" : s.offload.params ? "+param" : "",
             s.offload.delayed_update ? "+dpu" : "", s.offload.zenflow.enabled ? "+zenflow" : "",
             s.mics_shard_size > 0 ? cat("+mics", s.mics_shard_size) : "",
             s.quantized_weights ? "+qwZ" : "", s.hpz_partition_size > 1 ? cat("+hpZ", s.hpz_partition_size) : "",
             s.zero_quantized_gradients ? "+qgz" : "");
}

namespace {

void check_input(const PlanInput& in) {
  check_settings(in.settings, "planner");
  check_world(in.settings, in.ranks, "planner");
  if (in.ranks < 1) throw ConfigError(cat("[planner] ranks must be at least 1, not ", in.ranks));
  if (in.ranks_per_node < 1) throw ConfigError(cat("[planner] ranks per node must be at least 1, not ", in.ranks_per_node));
  std::vector<int> nodes;  // the ranks on each node: consecutive ranks, ranks_per_node a node
  for (int first = 0; first < in.ranks; first += in.ranks_per_node) nodes.push_back(std::min(in.ranks_per_node, in.ranks - first));
  check_nodes(in.settings, nodes, "planner");
  if (in.micro_batch < 1) throw ConfigError(cat("[planner] the micro-batch must be at least 1, not ", in.micro_batch));
  if (in.gradient_accumulation_steps < 1) {
    throw ConfigError(cat("[planner] gradient accumulation steps must be at least 1, not ", in.gradient_accumulation_steps));
  }
  if (!(in.link_bandwidth > 0)) throw ConfigError(cat("[planner] the link bandwidth must be positive, not ", in.link_bandwidth));
  if (in.model.units.empty()) throw ConfigError("[planner] the model has no units");
  const std::int64_t psi = in.model.num_parameters();
  if (psi < in.ranks) {
    throw ConfigError(cat("[planner] more ranks (", in.ranks, ") than parameters (", psi, "): use at most ", psi, " ranks"));
  }
}

// The engine refuses a unit with fewer parameters than the ranks it is sliced among (some ranks
// would own only padding).
void check_units(const FlatLayout& layout) {
  const auto n = static_cast<std::size_t>(layout.shard_size());
  for (int u = 0; u < layout.num_units(); ++u) {
    const UnitPlace& unit = layout.unit(u);
    if (unit.numel < n) {
      throw ConfigError(cat("[planner] unit '", unit.name, "' has ", unit.numel, " parameters, fewer than the ", n,
                            " ranks; the engine refuses that: use at most ", unit.numel, " ranks"));
    }
  }
}

// The NVMe optimizer's sub-groups: each optimizer part (a unit's slice: the NVMe tier needs
// stage 1 or more) in pieces of at most sub_group_size elements.
std::uint64_t sub_groups(const FlatLayout& layout, const EngineSettings& z) {
  const std::uint64_t size = std::max<std::uint64_t>(1, z.offload.nvme.sub_group_size);
  std::uint64_t n = 0;
  for (int u = 0; u < layout.num_units(); ++u) {
    n += (layout.unit(u).slice + size - 1) / size;
  }
  return n;
}

}  // namespace

Plan plan(const PlanInput& in) {
  check_input(in);
  const FlatLayout layout(in.model.units, in.ranks, shard_group_size(in.settings, in.ranks));
  check_units(layout);
  const EngineSettings& z = in.settings;

  Plan p;
  p.settings = z;
  p.ranks = in.ranks;
  p.ranks_per_node = std::min(in.ranks, in.ranks_per_node);
  p.nodes = (in.ranks + in.ranks_per_node - 1) / in.ranks_per_node;
  p.label = plan_label(z);
  p.numel = layout.numel();
  p.padded_numel = layout.padded_numel();
  p.shard_numel = layout.shard_numel();
  p.largest_unit = layout.largest_unit();
  p.units = layout.num_units();

  ActivationBytes activations;
  if (in.model.gpt && in.activation_bytes) {
    activations = in.activation_bytes(*in.model.gpt, in.micro_batch, in.checkpointing);
    p.activations_modelled = true;
  } else if (in.model.llama && in.llama_activation_bytes) {
    activations = in.llama_activation_bytes(*in.model.llama, in.micro_batch, in.checkpointing);
    p.activations_modelled = true;
  } else if (in.model.llama) {
    activations = llama_activation_bytes(*in.model.llama, in.micro_batch, in.checkpointing, z.precision.mixed() ? 2 : 4);
    p.activations_modelled = true;
  }
  const planner_detail::DryRun dry = planner_detail::run_dry(in, activations);
  p.device = dry.device;
  p.host = dry.host;
  p.nvme = dry.nvme;
  p.persistent_device = dry.persistent_device;
  p.traffic = dry.traffic;
  p.device_to_host_bytes = dry.to_host;
  p.host_to_device_bytes = dry.to_device;
  p.nvme_read_bytes = dry.disk_read;
  p.nvme_written_bytes = dry.disk_written;
  p.nvme_param_read_bytes = dry.param_disk_read;
  if (z.offload.optimizer_nvme) p.nvme_sub_groups = sub_groups(layout, z);
  p.host_per_node = p.host.total() * static_cast<std::uint64_t>(p.ranks_per_node);
  if (z.offload.optimizer) p.link_seconds = static_cast<double>(p.device_to_host_bytes + p.host_to_device_bytes) / in.link_bandwidth;
  return p;
}

}  // namespace zero
