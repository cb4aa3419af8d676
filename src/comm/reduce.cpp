#include "comm/reduce.h"

#include <algorithm>
#include <cstring>

namespace zero::detail {

void sum_in_rank_order(const float* const* in, int n, float* out, std::size_t k) {
  // Tiles keep the running sums in L1 while each input streams through once; within a tile the
  // order per element is still in[0] + in[1] + ... , which is all determinism needs.
  constexpr std::size_t kTile = 1024;
  float acc[kTile];
  for (std::size_t base = 0; base < k; base += kTile) {
    const std::size_t len = std::min(kTile, k - base);
    std::memcpy(acc, in[0] + base, len * sizeof(float));
    for (int j = 1; j < n; ++j) {
      const float* src = in[j] + base;
      for (std::size_t i = 0; i < len; ++i) acc[i] += src[i];
    }
    std::memcpy(out + base, acc, len * sizeof(float));
  }
}

}  // namespace zero::detail
