// The NVMe tier as the advisor's last resort: when the host memory given is too small for host
// offload of the optimizer state, the same configurations with the state on NVMe
// (offload_optimizer.device "nvme") keep only the gradient shard and buffer_count sub-groups in
// host memory. The advisor weighs their rows after host offload's, so host offload stays the
// choice whenever it fits.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner/advisor.h"

namespace zero {

// The settings with the NVMe tier when nothing in `plans` fits, a host capacity is given, some
// host-offload plan fits the device but not the host, and `input` has no NVMe tier of its own;
// nullopt otherwise. Its nvme_path is the key's name (a plan touches no disk).
std::optional<PlanInput> nvme_tier_input(const PlanInput& input, const std::vector<Plan>& plans, const Capacity& c,
                                         const Recommendation& r);

// The rows `nvme_input` adds: its configurations with the optimizer state on NVMe.
std::vector<Plan> plan_nvme_rows(const PlanInput& nvme_input, std::optional<int> only_stage);

// Why NVMe plan `p` was chosen: `fits` ("stage 2+nvme: fits (...)"), then what host offload
// needed against the host given, what the NVMe tier needs instead, and its disk traffic per step.
std::string nvme_reason(const std::string& fits, const Plan& p, const std::vector<Plan>& plans, const Capacity& c);

}  // namespace zero
