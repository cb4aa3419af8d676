#include "planner/nvme_advice.h"

#include <algorithm>

#include "common/error.h"

namespace zero {
namespace {

bool host_offload(const Plan& p) { return p.settings.offload.optimizer && !p.settings.offload.optimizer_nvme; }

// The host-offload plan that needs the least host memory among those that fit the device.
const Plan* least_host_offload(const std::vector<Plan>& plans, const Capacity& c) {
  const Plan* best = nullptr;
  for (const Plan& p : plans) {
    if (!host_offload(p) || !check_fit(p, c).device.value_or(true)) continue;
    if (!best || p.host_per_node < best->host_per_node) best = &p;
  }
  return best;
}

}  // namespace

std::optional<PlanInput> nvme_tier_input(const PlanInput& input, const std::vector<Plan>& plans, const Capacity& c,
                                         const Recommendation& r) {
  if (r.index >= 0 || !c.host || input.settings.offload.optimizer_nvme) return std::nullopt;
  const Plan* closest = least_host_offload(plans, c);
  if (!closest || closest->host_per_node <= *c.host) return std::nullopt;
  PlanInput in = input;
  in.settings.offload.optimizer_nvme = true;
  // The settings' checks want a folder; the planner's dry run only counts the swap file and
  // touches no disk, so the rows name the key the user will set.
  in.settings.offload.nvme.path = "nvme_path";
  return in;
}

std::vector<Plan> plan_nvme_rows(const PlanInput& nvme_input, std::optional<int> only_stage) {
  std::vector<Plan> rows;
  PlanInput in = nvme_input;
  for (const EngineSettings& z : estimate_settings(nvme_input.settings, only_stage)) {
    if (!z.offload.optimizer_nvme || !settings_problems(z).empty()) continue;  // e.g. Lamb: not on the NVMe tier yet
    in.settings = z;
    rows.push_back(plan(in));
  }
  return rows;
}

std::string nvme_reason(const std::string& fits, const Plan& p, const std::vector<Plan>& plans, const Capacity& c) {
  std::string s = cat(fits, " with the optimizer state on NVMe (offload_optimizer.device \"nvme\"): ");
  const Plan* host = least_host_offload(plans, c);
  if (host && c.host) {
    s += cat("host offload needs at least ", gib(host->host_per_node), " of host memory per node (stage ", host->label,
             "), more than the ", gib(*c.host), " given; ");
  }
  return s + cat("NVMe needs ", gib(p.host_per_node), " of host memory per node (the gradient shard and ", p.settings.offload.nvme.buffer_count,
                 " sub-group buffers) and ", gib(p.nvme.total()), " per rank on nvme_path, read (", gib(p.nvme_read_bytes),
                 ") and written (", gib(p.nvme_written_bytes), ") every step");
}

}  // namespace zero
