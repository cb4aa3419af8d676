// The one summation every backend uses, so that all backends give the same bits.
#pragma once

#include <cstddef>

namespace zero::detail {

// out[i] = in[0][i] + in[1][i] + ... + in[n-1][i], added left to right in rank order.
// `out` may alias any in[j] (it is written only after element i has been read from all inputs).
void sum_in_rank_order(const float* const* in, int n, float* out, std::size_t k);

}  // namespace zero::detail
