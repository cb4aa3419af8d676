// The CPU Lamb step: multi-threaded, bit-identical to lamb_moments_reference and
// lamb_update_reference (optim/lamb.h).
//
// Phase 1 hands each OpenMP thread whole blocks of kLambSumBlock elements (counted from the run's
// start, as the reference counts them); each block's sums are kept apart and added in block order
// after the parallel loop, so the sums do not depend on the thread count. Phase 2 is element-wise
// and split freely. The per-element arithmetic is the reference's own (optim/lamb_body.h).
//
// Spans must not overlap; all but the optional copy must have one length.
#pragma once

#include <cstdint>
#include <span>

#include "common/half.h"
#include "optim/lamb.h"

namespace zero {

struct LambOptions {
  int threads = 0;  // OpenMP threads; 0: omp_get_max_threads(). Thread ranks pass 1.
};

// Phase 1 over one run: m and v updated; the run's block sums added, in block order, into `acc`.
// A run split at multiples of kLambSumBlock and fed piece by piece into one accumulator gives the
// whole run's sums.
void lamb_moments(const LambStep& s, bool decay, std::span<const float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, LambNorms& acc, const LambOptions& opts = {});

// Phase 2 over one run; `copy`, if not empty, receives the updated parameters rounded to `format`.
void lamb_update(const LambStep& s, bool decay, float coef, std::span<float> p, std::span<const float> m,
                 std::span<const float> v, std::span<std::uint16_t> copy = {}, HalfFormat format = HalfFormat::kBf16,
                 const LambOptions& opts = {});

}  // namespace zero
