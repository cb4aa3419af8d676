// The stage advisor: plans every configuration, checks each against the memory there is, and
// recommends one, with one line of reason per configuration it weighed.
//
// The order it prefers, cheapest first (the practice DeepSpeed's and Hugging Face's guides give):
//   stage 1     Adam's state sharded: the traffic of plain data parallelism (2Ψ(N-1)/N per step)
//               with less memory than stage 0, so it is the choice whenever the model fits;
//   stage 2     gradients sharded too: same traffic, less memory: when stage 1 slightly exceeds,
//               and also when both fit: at equal traffic the one with more memory to spare wins;
//   stage 3     parameters sharded too: 1.5x the traffic (3Ψ(N-1)/N, more with tied weights):
//               when the model is far from fitting;
//   2+opt, 3+opt, 3+opt+param   offload to the host when no device-only stage fits and the
//               host has room: each step then also crosses the host link. 1+opt is tabulated but
//               not weighed: with offload, stage 1 sheds its gradients and is 2+opt. With the
//               delayed update asked for, 1+opt+dpu .. 3+opt+dpu instead (3+opt+param has none).
// On one rank nothing can be sharded: stage 0, then the offload configurations. A plan fits when
// its device peak is within the device less the headroom (Capacity::headroom).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner/planner.h"

namespace zero {

// The headroom kept free on a device: the allocator's fragmentation, the framework's context and
// kernels' workspaces are not in a plan. 10% is what DeepSpeed and PyTorch users leave (a CUDA
// context alone takes ~0.5 GiB; the caching allocator's fragmentation is commonly 5-10%).
inline constexpr double kDefaultHeadroom = 0.10;

struct Capacity {
  std::optional<std::uint64_t> device;  // bytes per device (per rank)
  std::optional<std::uint64_t> host;    // bytes per node
  double headroom = kDefaultHeadroom;   // share of the device kept free: a plan fits within device x (1 - headroom)
  std::optional<std::uint64_t> usable_device() const;
};

// Whether a plan fits; an unknown capacity is no constraint (and the output says unknown).
struct Fit {
  std::optional<bool> device;
  std::optional<bool> host;
  bool fits() const { return device.value_or(true) && host.value_or(true); }
};
Fit check_fit(const Plan& plan, const Capacity& capacity);

// The configurations `zero estimate` tabulates: stages 0-3, then 1+opt, 2+opt, 3+opt and
// 3+opt+param; only those of `only_stage` when given. The rest of `base` (buckets) is kept.
std::vector<EngineSettings> estimate_settings(const EngineSettings& base, std::optional<int> only_stage);
std::vector<Plan> plan_all(const PlanInput& input, std::optional<int> only_stage);

struct Recommendation {
  int index = -1;                    // into the plans given, or -1: nothing fits
  std::vector<std::string> reasons;  // one line per configuration weighed, in order
  // When nothing fits: the fewest ranks (same devices, same ranks per node) at which one of the
  // preferred configurations would, and which.
  std::optional<int> ranks_needed;
  std::string label_needed;
  // When nothing fits: the nearest miss on these ranks (what more memory would make it fit).
  std::string closest;
  // When nothing fits: what would on these ranks, with its numbers: a smaller micro-batch with
  // gradient accumulation keeping the global batch, activation checkpointing, or both.
  std::vector<std::string> alternatives;
};

// `plans` as plan_all returned them for `input`.
Recommendation recommend(const PlanInput& input, const std::vector<Plan>& plans, const Capacity& capacity,
                         std::optional<int> only_stage);

// The largest micro-batch (sequences per rank) at which configuration `z` fits the device within
// the headroom, with `in`'s other settings (checkpointing included); 0 when even 1 does not, and
// nullopt when the device capacity is not given or activations are not modelled. At most 65536.
std::optional<int> largest_micro_batch(const PlanInput& in, const EngineSettings& z, const Capacity& c);

// A size in the unit that fits it: "12.34 GiB", "3.50 MiB", "768.00 KiB", "12 B" (2^10 steps).
std::string gib(std::uint64_t bytes);
// 1234567 -> "1,234,567"
std::string grouped(std::uint64_t n);

}  // namespace zero
