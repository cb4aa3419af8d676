// Internal to the planner: one optimizer step walked through in the engine's order, tracking the
// buffers a stage allocates and frees during it and the collectives it issues.
//
// This mirrors Engine::forward/backward (src/engine/engine.cpp) and the stages' policies
// (src/engine/stage*.cpp): fetch a unit and its borrows, prefetch the neighbour when the unit
// borrows nothing, hand out gradient views, release, reduce every unit whose last reader has
// run. When the engine's order changes, this file changes with it; the planner tests compare
// the walk with the ledger of a real run.
#pragma once

#include <cstdint>

#include "partition/layout.h"
#include "planner/planner.h"

namespace zero::planner_detail {

struct WalkOptions {
  int stage = 0;
  bool offload_optimizer = false;
  bool offload_param = false;
  std::uint64_t param_bytes = 4;  // per element of the parameters the device computes with
  std::uint64_t grad_bytes = 4;   // per element of device gradients and of their reductions
  bool comm_scratch = true;       // reduce_scatter allocates an all-to-all scratch (MPI backend)
  // Elements per rank of one piece of a reduction / a gather (the bucket sizes over N); 0: one piece.
  std::uint64_t reduce_segment = 0, gather_segment = 0;
  int micro_batches = 1;          // gradient accumulation steps per optimizer step
};

struct WalkResult {
  TierBytes peak;                    // device bytes by category at the peak, baseline included
  StepTraffic traffic;               // collectives of one optimizer step
  std::uint64_t gathered_slice_elements = 0;  // this rank's slices of every gather (offload_param copies them in)
  std::uint64_t reduced_slice_elements = 0;   // this rank's slices of every reduction (offload copies them out)
};

// `baseline`: what is allocated for the whole step (parameters, gradient and optimizer shards,
// activations). Returns the device peak over the step on top of it.
WalkResult walk_step(const FlatLayout& layout, const WalkOptions& options, const TierBytes& baseline);

}  // namespace zero::planner_detail
