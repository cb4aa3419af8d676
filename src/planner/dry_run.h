// Internal to the planner: the engine run dry. The engine's own schedule (src/engine) runs two
// optimizer steps of a model known only by its units, on the counting device (allocations go to
// a ledger and hold no memory; nothing is computed) over the counting communicator (collectives
// are counted and never run). What the ledger, the traffic counters and the link counters then
// hold is the prediction: it cannot drift from what the engine does, because it is what the
// engine does.
#pragma once

#include <cstdint>

#include "planner/planner.h"

namespace zero::planner_detail {

struct DryRun {
  TierBytes device;             // device bytes by category at the moment of the device peak
  TierBytes host;               // host bytes by category at the moment of the host peak
  TierBytes nvme;               // swap-file bytes by category (the NVMe tier), at its peak
  TierBytes persistent_device;  // device bytes held once the engine is built, before any step
  StepTraffic traffic;          // the second optimizer step's collectives
  std::uint64_t to_host = 0, to_device = 0;  // the second step's copies across the link
  std::uint64_t disk_read = 0, disk_written = 0;  // the second step's NVMe tier traffic
  std::uint64_t param_disk_read = 0;              // of disk_read, the parameter swap file's
};

// `activations`: what the model allocates for activations, by tier, before the engine is built.
DryRun run_dry(const PlanInput& input, const ActivationBytes& activations);

}  // namespace zero::planner_detail
