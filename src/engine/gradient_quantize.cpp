#include "engine/gradient_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace zero {
namespace {

std::size_t blocks_of(std::size_t n) { return (n + kGradientBlock - 1) / kGradientBlock; }

// The block's scale: max |x| / 7, 0 for zeros, NaN when an element is not finite.
float block_scale(const float* x, std::size_t n) {
  float m = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) return std::numeric_limits<float>::quiet_NaN();
    m = std::max(m, std::fabs(x[i]));
  }
  return m / static_cast<float>(kGradientLevels);
}

int level_of(float x, float s) {
  if (!(s > 0.0f) || !std::isfinite(s)) return 0;  // zeros, or a block that carries its NaN in the scale
  const float q = std::rint(x / s);
  return static_cast<int>(std::clamp(q, -static_cast<float>(kGradientLevels), static_cast<float>(kGradientLevels)));
}

}  // namespace

std::size_t int4_bytes(std::size_t n) { return blocks_of(n) * sizeof(float) + (n + 1) / 2; }

void quantize_int4(const float* x, std::size_t n, std::uint8_t* out) {
  const std::size_t blocks = blocks_of(n);
  std::uint8_t* values = out + blocks * sizeof(float);
  std::memset(values, 0, (n + 1) / 2);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t first = b * kGradientBlock, len = std::min(kGradientBlock, n - first);
    const float s = block_scale(x + first, len);
    std::memcpy(out + b * sizeof(float), &s, sizeof(float));
    for (std::size_t i = first; i < first + len; ++i) {
      const auto nibble = static_cast<std::uint8_t>(level_of(x[i], s) & 0xF);
      values[i / 2] |= static_cast<std::uint8_t>(i % 2 == 0 ? nibble : nibble << 4);
    }
  }
}

void dequantize_int4(const std::uint8_t* in, std::size_t n, float* out) {
  const std::size_t blocks = blocks_of(n);
  const std::uint8_t* values = in + blocks * sizeof(float);
  for (std::size_t b = 0; b < blocks; ++b) {
    float s;
    std::memcpy(&s, in + b * sizeof(float), sizeof(float));
    const std::size_t first = b * kGradientBlock, last = std::min(n, first + kGradientBlock);
    for (std::size_t i = first; i < last; ++i) {
      const int nibble = i % 2 == 0 ? values[i / 2] & 0xF : values[i / 2] >> 4;
      const int q = nibble >= 8 ? nibble - 16 : nibble;  // 4-bit two's complement
      out[i] = static_cast<float>(q) * s;
    }
  }
}

}  // namespace zero
