#include "planner/host_fit.h"

#include <optional>
#include <vector>

#include "common/error.h"
#include "planner/advisor.h"

namespace zero {
namespace {

// "36,782,571,520 bytes (34.26 GiB)": exact, so two figures never print alike.
std::string bytes_and_gib(std::uint64_t bytes) { return cat(grouped(bytes), " bytes (", gib(bytes), ")"); }

struct Setup {
  const PlanInput& in;
  bool device_in_host_memory;
  int ranks_on_host;
  std::uint64_t data_shared, data_per_rank, available;

  // The need of `variant` (a changed copy of `in`), or nullopt where the planner refuses it.
  std::optional<std::uint64_t> need(const PlanInput& variant) const {
    try {
      return host_need(plan(variant), device_in_host_memory, ranks_on_host, data_shared, data_per_rank).total();
    } catch (const ConfigError&) {
      return std::nullopt;
    }
  }
  bool fits(const PlanInput& variant) const {
    const auto n = need(variant);
    return n && *n <= available;
  }
};

// The first other configuration (in zero estimate's order) that fits with everything else kept.
std::string other_stage(const Setup& s) {
  for (const EngineSettings& z : estimate_settings(s.in.settings, std::nullopt)) {
    if (plan_label(z) == plan_label(s.in.settings)) continue;
    PlanInput v = s.in;
    v.settings = z;
    if (s.fits(v)) return cat("stage ", plan_label(z), " fits: it needs ", gib(*s.need(v)));
  }
  return "";
}

// The largest micro-batch below the run's that fits (the need grows with it), as a divisor of the
// run's so that raising the accumulation keeps the global batch.
std::string smaller_micro_batch(const Setup& s) {
  PlanInput v = s.in;
  auto fits_at = [&](int m) {
    v.micro_batch = m;
    return s.fits(v);
  };
  const int B = s.in.micro_batch;
  if (B <= 1 || !fits_at(1)) return "";
  int lo = 1, hi = B;  // fits_at(lo), !fits_at(hi)
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (fits_at(mid) ? lo : hi) = mid;
  }
  int d = lo;
  while (B % d != 0) --d;
  v.micro_batch = d;
  return cat("micro-batch ", d, " with gradient_accumulation_steps ", s.in.gradient_accumulation_steps * (B / d),
             " (the same global batch) fits at stage ", plan_label(s.in.settings), ": it needs ", gib(*s.need(v)),
             d < lo ? cat("; the largest micro-batch that fits is ", lo) : std::string());
}

std::string with_checkpointing(const Setup& s) {
  if (s.in.checkpointing.enabled) return "";
  PlanInput v = s.in;
  v.checkpointing.enabled = true;
  if (!s.fits(v)) return "";
  return cat("--activation-checkpointing (each block's forward runs again in backward) fits at stage ",
             plan_label(s.in.settings), ": it needs ", gib(*s.need(v)));
}

std::string advice(const Setup& s) {
  std::vector<std::string> lines;
  for (const std::string& line : {other_stage(s), smaller_micro_batch(s), with_checkpointing(s)})
    if (!line.empty()) lines.push_back("  " + line);
  if (lines.empty()) {
    return cat("No stage, offload, micro-batch or activation checkpointing makes it fit on this host: run fewer ranks per "
               "host (more hosts), free memory, or use a host with more");
  }
  std::string out = "What would fit:";
  for (const std::string& line : lines) out += "\n" + line;
  return out;
}

}  // namespace

std::uint64_t HostNeed::total() const {
  return static_cast<std::uint64_t>(ranks_on_host) * (planned_per_rank() + margin_per_rank) + data;
}

HostNeed host_need(const Plan& plan, bool device_in_host_memory, int ranks_on_host, std::uint64_t data_shared,
                   std::uint64_t data_per_rank) {
  HostNeed n;
  n.ranks_on_host = ranks_on_host;
  n.device_in_host_memory = device_in_host_memory;
  n.device_per_rank = plan.device.total();
  n.host_per_rank = plan.host.total();
  n.margin_per_rank = kRankBaseBytes + static_cast<std::uint64_t>(kHostMarginFraction * static_cast<double>(n.planned_per_rank()));
  n.data = data_shared + static_cast<std::uint64_t>(ranks_on_host) * data_per_rank;
  return n;
}

void check_host_fit(const PlanInput& in, bool device_in_host_memory, int ranks_on_host, std::uint64_t data_shared,
                    std::uint64_t data_per_rank, const HostMemory& memory) {
  const HostNeed n = host_need(plan(in), device_in_host_memory, ranks_on_host, data_shared, data_per_rank);
  if (n.total() <= memory.available) return;
  const Setup setup{in, device_in_host_memory, ranks_on_host, data_shared, data_per_rank, memory.available};
  const std::string tiers = device_in_host_memory
                                ? cat("device tier ", gib(n.device_per_rank), ", host memory on the cpu device, + host tier ", gib(n.host_per_rank))
                                : cat("host tier; the device tier, ", gib(n.device_per_rank), ", is on the device");
  throw OutOfMemoryError(cat(
      "[train] this run needs ", bytes_and_gib(n.total()), " of host memory, but this host has ", bytes_and_gib(memory.available),
      " available (", memory.source, "). Needed: ", n.ranks_on_host, " rank", n.ranks_on_host == 1 ? "" : "s",
      " on this host x (", gib(n.planned_per_rank()), " planned per rank at stage ", plan_label(in.settings), ", micro-batch ",
      in.micro_batch, ": ", tiers, "; + ", gib(n.margin_per_rank), " margin: ", gib(kRankBaseBytes), " for the process and ",
      static_cast<int>(kHostMarginFraction * 100), "% for what the plan leaves out) + ", gib(n.data),
      " of data. Nothing was allocated. ", advice(setup)));
}

}  // namespace zero
