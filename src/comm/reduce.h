// The one summation every backend uses, so that all backends give the same bits.
#pragma once

#include <cstddef>

#include "common/dtype.h"

namespace zero::detail {

// out[i] = in[0][i] + in[1][i] + ... + in[n-1][i], added left to right in rank order, for k
// elements of type `dtype`. 16-bit elements are widened, added in f32 in the same order and
// rounded once (to nearest even): the sum is the f32 sum of the 16-bit inputs, rounded.
// `out` may alias any in[j] (it is written only after element i has been read from all inputs).
void sum_in_rank_order(const void* const* in, int n, void* out, std::size_t k, Dtype dtype);

}  // namespace zero::detail
