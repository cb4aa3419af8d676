#include "planner/planner.h"

#include <algorithm>

#include "common/error.h"
#include "model/gpt.h"
#include "partition/layout.h"
#include "planner/activation_counts.h"
#include "planner/dry_run.h"
#include "planner/step_walk.h"

namespace zero {

const char* dtype_name(DtypeMode d) { return d == DtypeMode::kFp32 ? "fp32" : "mixed"; }

DtypeMode parse_dtype(const std::string& text) {
  if (text == "fp32") return DtypeMode::kFp32;
  if (text == "mixed" || text == "bf16" || text == "fp16") return DtypeMode::kMixed;
  throw ConfigError(cat("[planner] unknown dtype '", text, "': use fp32, or mixed (bf16/fp16 parameters and gradients "
                        "with fp32 master parameters and Adam state)"));
}

ActivationBytesFn gpt_activation_hook() {
  return [](const GptShape& shape, int micro_batch, const GptCheckpointing& ckpt) {
    return Gpt::activation_bytes(shape, micro_batch, ckpt);
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

std::uint64_t StepTraffic::total() const {
  std::uint64_t t = 0;
  for (auto b : sent) t += b;
  return t;
}

std::string plan_label(const ZeroSettings& zero) {
  return cat(zero.stage, zero.offload_optimizer ? "+opt" : "", zero.offload_param ? "+param" : "",
             zero.delayed_update ? "+dpu" : "");
}

namespace {

void check_input(const PlanInput& in) {
  const ZeroSettings& z = in.zero;
  if (z.stage < 0 || z.stage > 3) throw ConfigError(cat("[planner] ZeRO stage ", z.stage, " does not exist: use 0, 1, 2 or 3"));
  if (in.ranks < 1) throw ConfigError(cat("[planner] ranks must be at least 1, not ", in.ranks));
  if (in.ranks_per_node < 1) throw ConfigError(cat("[planner] ranks per node must be at least 1, not ", in.ranks_per_node));
  if (in.micro_batch < 1) throw ConfigError(cat("[planner] the micro-batch must be at least 1, not ", in.micro_batch));
  if (in.gradient_accumulation_steps < 1) {
    throw ConfigError(cat("[planner] gradient accumulation steps must be at least 1, not ", in.gradient_accumulation_steps));
  }
  if (!(in.link_bandwidth > 0)) throw ConfigError(cat("[planner] the link bandwidth must be positive, not ", in.link_bandwidth));
  if (z.offload_optimizer && z.stage == 0) {
    throw ConfigError("[planner] optimizer offload needs ZeRO stage 1, 2 or 3 (DeepSpeed refuses it in stage 0)");
  }
  if (z.offload_param && z.stage != 3) throw ConfigError("[planner] parameter offload needs ZeRO stage 3");
  if (z.offload_param && !z.offload_optimizer) {
    throw ConfigError("[planner] parameter offload is planned together with optimizer offload: set offload_optimizer too");
  }
  if (z.delayed_update && !z.offload_optimizer) {
    throw ConfigError("[planner] the delayed update is a setting of optimizer offload: set offload_optimizer too");
  }
  if (z.delayed_update && z.offload_param) {
    throw ConfigError("[planner] the delayed update with parameter offload is not supported by the engine: "
                      "plan it with optimizer offload alone");
  }
  if (in.model.units.empty()) throw ConfigError("[planner] the model has no units");
  const std::int64_t psi = in.model.num_parameters();
  if (psi < in.ranks) {
    throw ConfigError(cat("[planner] more ranks (", in.ranks, ") than parameters (", psi, "): use at most ", psi, " ranks"));
  }
}

// The engine refuses a unit with fewer parameters than ranks (some ranks would own only padding).
void check_units(const FlatLayout& layout) {
  const auto n = static_cast<std::size_t>(layout.world_size());
  for (int u = 0; u < layout.num_units(); ++u) {
    const UnitPlace& unit = layout.unit(u);
    if (unit.numel < n) {
      throw ConfigError(cat("[planner] unit '", unit.name, "' has ", unit.numel, " parameters, fewer than the ", n,
                            " ranks; the engine refuses that: use at most ", unit.numel, " ranks"));
    }
  }
}

struct ElementBytes {
  std::uint64_t param, grad, optim;  // device parameters, device gradients, optimizer state per element
};

ElementBytes element_bytes(DtypeMode d) {
  // fp32: Adam's m and v. Mixed: the fp32 master copy, m and v (K = 12).
  return d == DtypeMode::kFp32 ? ElementBytes{4, 4, 8} : ElementBytes{2, 2, 12};
}

// What the stage holds for the whole step, device and host, before any transient buffer.
void persistent_state(const PlanInput& in, const FlatLayout& layout, TierBytes& device, TierBytes& host) {
  const ZeroSettings& z = in.zero;
  const ElementBytes b = element_bytes(in.dtype);
  const std::uint64_t P = layout.padded_numel(), S = layout.shard_numel();
  device[Category::kParameters] = z.stage < 3 ? P * b.param : (z.offload_param ? 0 : S * b.param);
  if (z.offload_optimizer) {
    // Every stage's gradients are transient on the device (the walk has them); the host holds
    // m, v (+ the fp32 master in mixed precision), the fp32 gradient shard CPU Adam reads (two
    // with the delayed update) and, in fp32 mode, the fp32 parameter shard CPU Adam updates.
    // Stage 1 keeps its whole gradients on the device with offload too (one stage, one policy).
    if (z.stage < 2) device[Category::kGradients] = P * b.grad;
    // Shedding stages accumulating over micro-batches add later slices through one host staging slice.
    if (z.stage >= 2 && in.gradient_accumulation_steps > 1) host[Category::kCommBuffers] = layout.largest_unit() / in.ranks * 4;
    host[Category::kOptimizerState] = S * b.optim;
    host[Category::kGradients] = S * 4 * (z.delayed_update ? 2 : 1);
    if (in.dtype == DtypeMode::kFp32) host[Category::kParameters] = S * 4;
    // offload_param in mixed precision: the bf16 shard DeepSpeed keeps on the host to gather from.
    if (z.offload_param && in.dtype == DtypeMode::kMixed) host[Category::kParameters] = S * b.param;
    return;
  }
  device[Category::kGradients] = (z.stage < 2 ? P : S) * b.grad;
  device[Category::kOptimizerState] = (z.stage == 0 ? P : S) * b.optim;
}

// Mixed precision, until the engine has 16-bit buffers to run dry: the step walked by hand.
void walk_mixed(const PlanInput& in, const FlatLayout& layout, const ActivationBytes& activations, Plan& p) {
  const ZeroSettings& z = in.zero;
  const ElementBytes b = element_bytes(in.dtype);
  TierBytes device;
  persistent_state(in, layout, device, p.host);
  p.persistent_device = device;
  device[Category::kActivations] = activations.device;
  p.host[Category::kActivations] = activations.host;
  planner_detail::WalkOptions w;
  w.stage = z.stage;
  w.offload_optimizer = z.offload_optimizer;
  w.offload_param = z.offload_param;
  w.param_bytes = b.param;
  w.grad_bytes = b.grad;
  w.comm_scratch = in.comm_scratch && in.ranks > 1;  // one rank runs the self backend: no scratch
  w.micro_batches = in.gradient_accumulation_steps;
  const auto per_rank = [&](std::int64_t bucket) { return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(bucket) / in.ranks); };
  w.reduce_segment = per_rank(z.reduce_bucket_size);
  w.gather_segment = per_rank(z.allgather_bucket_size);
  const planner_detail::WalkResult walk = planner_detail::walk_step(layout, w, device);
  p.device = walk.peak;
  p.traffic = walk.traffic;
  if (z.offload_optimizer) {
    p.device_to_host_bytes = walk.reduced_slice_elements * b.grad;
    p.host_to_device_bytes = z.offload_param ? walk.gathered_slice_elements * b.param : layout.shard_numel() * b.param;
  }
}

}  // namespace

Plan plan(const PlanInput& in) {
  check_input(in);
  const FlatLayout layout(in.model.units, in.ranks);
  check_units(layout);
  const ZeroSettings& z = in.zero;

  Plan p;
  p.zero = z;
  p.dtype = in.dtype;
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
  } else if (in.model.llama) {
    activations = llama_activation_bytes(*in.model.llama, in.micro_batch, in.checkpointing, in.dtype == DtypeMode::kMixed ? 2 : 4);
    p.activations_modelled = true;
  }
  if (in.dtype == DtypeMode::kFp32) {
    const planner_detail::DryRun dry = planner_detail::run_dry(in, activations);
    p.device = dry.device;
    p.host = dry.host;
    p.persistent_device = dry.persistent_device;
    p.traffic = dry.traffic;
    p.device_to_host_bytes = dry.to_host;
    p.host_to_device_bytes = dry.to_device;
  } else {
    walk_mixed(in, layout, activations, p);
  }
  p.host_per_node = p.host.total() * static_cast<std::uint64_t>(p.ranks_per_node);
  if (z.offload_optimizer) p.link_seconds = static_cast<double>(p.device_to_host_bytes + p.host_to_device_bytes) / in.link_bandwidth;
  return p;
}

}  // namespace zero
