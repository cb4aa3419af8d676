// Whether a run fits the host's memory, checked before its first allocation: the planner's
// per-rank figures (activations included) for every rank on the host, with a margin, plus the
// data, against what the host has available (common/host_memory.h). On the CPU device the
// device tier is host memory too, so it counts; on a GPU only the host tier does.
#pragma once

#include <cstdint>
#include <string>

#include "common/host_memory.h"
#include "planner/planner.h"

namespace zero {

// What the plan does not hold, per rank: the process itself (code, libraries, MPI's and
// OpenBLAS's buffers: 90-140 MiB measured for a rank of the built-in model) and the allocations
// outside the ledger (input copies, the allocator's fragmentation: measured 3-5% over the plan
// for the built-in model at micro-batch 500-1500). 10% is also the headroom the advisor keeps on
// a device (advisor.h).
inline constexpr std::uint64_t kRankBaseBytes = std::uint64_t{256} << 20;
inline constexpr double kHostMarginFraction = 0.10;

struct HostNeed {
  int ranks_on_host = 1;
  bool device_in_host_memory = true;  // the CPU device: its tier is host memory
  std::uint64_t device_per_rank = 0;  // the plan's device-tier peak, counted when device_in_host_memory
  std::uint64_t host_per_rank = 0;    // the plan's host tier
  std::uint64_t margin_per_rank = 0;  // kRankBaseBytes + kHostMarginFraction of the planned bytes
  std::uint64_t data = 0;             // the data's resident bytes on this host
  std::uint64_t planned_per_rank() const { return (device_in_host_memory ? device_per_rank : 0) + host_per_rank; }
  std::uint64_t total() const;
};

// The need of `plan` with `ranks_on_host` ranks on this host; `data_shared` is counted once (a
// mapped file), `data_per_rank` once per rank (a decompressed copy).
HostNeed host_need(const Plan& plan, bool device_in_host_memory, int ranks_on_host, std::uint64_t data_shared,
                   std::uint64_t data_per_rank);

// Throws OutOfMemoryError ("[train] this run needs N bytes (x GiB) of host memory, but this host
// has M bytes (y GiB) available (source) ... Nothing was allocated." and what would fit: another
// stage or offload, a smaller micro-batch keeping the global batch, activation checkpointing)
// when the need of `in` exceeds `memory`.
void check_host_fit(const PlanInput& in, bool device_in_host_memory, int ranks_on_host, std::uint64_t data_shared,
                    std::uint64_t data_per_rank, const HostMemory& memory);

}  // namespace zero
