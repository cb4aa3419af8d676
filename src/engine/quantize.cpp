#include "engine/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace zero {

void quantize_int8(const float* x, std::size_t k, std::uint8_t* packet) {
  auto* q = reinterpret_cast<std::int8_t*>(packet);
  std::uint8_t* scales = packet + k;
  for (std::size_t b = 0; b < quant_blocks(k); ++b) {
    const std::size_t begin = b * kQuantBlock, end = std::min(k, begin + kQuantBlock);
    float m = 0.0f;
    bool finite = true;
    for (std::size_t i = begin; i < end; ++i) m = std::max(m, std::fabs(x[i])), finite = finite && std::isfinite(x[i]);
    // A block with an Inf or NaN carries NaN in its scale (every value then dequantises to NaN, as
    // the unquantised gather would spread it) and zeros as values: a NaN is never cast to int8.
    const float scale = finite ? m / 127.0f : std::numeric_limits<float>::quiet_NaN();
    const float inv = finite && m > 0.0f ? 127.0f / m : 0.0f;
    for (std::size_t i = begin; i < end; ++i) {
      q[i] = finite ? static_cast<std::int8_t>(std::clamp(std::rint(x[i] * inv), -127.0f, 127.0f)) : std::int8_t{0};
    }
    std::memcpy(scales + 4 * b, &scale, 4);
  }
}

void dequantize_int8(const std::uint8_t* packet, std::size_t k, float* out) {
  const auto* q = reinterpret_cast<const std::int8_t*>(packet);
  const std::uint8_t* scales = packet + k;
  for (std::size_t b = 0; b < quant_blocks(k); ++b) {
    const std::size_t begin = b * kQuantBlock, end = std::min(k, begin + kQuantBlock);
    float scale;
    std::memcpy(&scale, scales + 4 * b, 4);
    for (std::size_t i = begin; i < end; ++i) out[i] = static_cast<float>(q[i]) * scale;
  }
}

}  // namespace zero
