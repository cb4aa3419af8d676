#include "comm/reduce.h"

#include <algorithm>

namespace zero::detail {

void sum_in_rank_order(const void* const* in, int n, void* out, std::size_t k, Dtype dtype) {
  // Tiles keep the running sums in L1 while each input streams through once; within a tile the
  // order per element is still in[0] + in[1] + ... , which is all determinism needs.
  constexpr std::size_t kTile = 1024;
  const std::size_t bytes = dtype_bytes(dtype);
  float acc[kTile];
  float next[kTile];
  for (std::size_t base = 0; base < k; base += kTile) {
    const std::size_t len = std::min(kTile, k - base);
    widen_to_f32(static_cast<const char*>(in[0]) + base * bytes, dtype, acc, len);
    for (int j = 1; j < n; ++j) {
      const char* src = static_cast<const char*>(in[j]) + base * bytes;
      if (dtype == Dtype::kF32) {
        const auto* f = reinterpret_cast<const float*>(src);
        for (std::size_t i = 0; i < len; ++i) acc[i] += f[i];
      } else {
        widen_to_f32(src, dtype, next, len);
        for (std::size_t i = 0; i < len; ++i) acc[i] += next[i];
      }
    }
    narrow_from_f32(acc, dtype, static_cast<char*>(out) + base * bytes, len);
  }
}

}  // namespace zero::detail
