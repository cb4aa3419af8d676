// Bounds on what `zero estimate` plans. They lie far above any real model (the largest published
// ones have about 130 blocks and 2e12 parameters), and keep the planner's 64-bit byte counts from
// overflowing and its walk of the step to seconds: an absurd shape gets an error naming the input
// instead of a wrong figure, an internal error or a run that does not end.
#pragma once

#include <cstdint>
#include <string>

#include "model/gpt_shape.h"
#include "planner/planner.h"

namespace zero::cli {

inline constexpr std::int64_t kMaxUnits = 10'000;                       // units of one model
inline constexpr long double kMaxParameters = 17'592'186'044'416.0L;    // 2^44, 16 bytes each: 2^48
inline constexpr int kMaxRanks = 1 << 20;
inline constexpr int kMaxRanksPerNode = 4096;
inline constexpr std::int64_t kMaxWalk = 1'000'000;  // micro-batches x units: the walk simulates each
inline constexpr long double kMaxActivationBytes = 1152921504606846976.0L;  // 2^60

// Checks a GPT shape (from the flags or a config's "model" section: `source`) before its units
// are built: its fields as GptShape::validate does, then its units and its parameter count.
void check_gpt_limits(const GptShape& shape, const std::string& source);

// Checks --params and --largest-unit before describe_counts lays out ceil(params / largest) units.
void check_count_limits(std::int64_t parameters, std::int64_t largest_unit);

// Checks the run around the model: ranks, ranks per node, accumulation steps (times units) and (for a GPT) the
// activations of one micro-batch, computed in long double.
void check_run_limits(const PlanInput& in);

}  // namespace zero::cli
