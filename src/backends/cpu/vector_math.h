// Element-wise math and row reductions for the GPT's CPU kernels, written as plain scalar code
// that the compiler vectorises: no libm calls (exp, tanh) and no float ?: (a branch under
// -ftrapping-math) in the loops.
//
// Bits do not depend on the vector width. Every lane performs the same IEEE operations in the
// same order as scalar code (no fused multiply-add: the build has -ffp-contract=off), and a
// reduction keeps kLanes partial sums, element i going to partial i % kLanes, combined in one
// fixed tree. So the SSE, AVX2 and AVX-512 builds of a loop (gpt_kernels.cpp compiles its hot
// loops for all three, picked at run time) and a scalar loop all give the same result.
#pragma once

#include <bit>
#include <cstdint>

namespace zero::gpt {

// a ? b : c, as a bit select.
inline float select(bool a, float b, float c) {
  const std::int32_t m = -static_cast<std::int32_t>(a);
  return std::bit_cast<float>((std::bit_cast<std::int32_t>(b) & m) | (std::bit_cast<std::int32_t>(c) & ~m));
}

// exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2], exp(r) by Cephes'
// degree-6 polynomial (within 2 ulp of expf). n is read from the bits of x/ln2 + 1.5*2^23, so
// there is no float-to-int conversion. x is clamped to [-87, 88] (exp(-87) ~ 1.6e-38 stands in
// for underflow); NaN stays NaN.
inline float exp_approx(float x) {
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  x = select(x < -87.0f, -87.0f, x);
  x = select(x > 88.0f, 88.0f, x);
  const float t = x * kLog2e + kMagic;
  const float n = t - kMagic;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = (p * (r * r) + r) + 1.0f;
  const std::int32_t e = std::bit_cast<std::int32_t>(t) - std::bit_cast<std::int32_t>(kMagic);
  return p * std::bit_cast<float>((e + 127) << 23);
}

// tanh(u) = 1 - 2 / (1 + exp(2u)): absolute error ~1e-7, which is what counts where GELU uses it
// (1 + tanh, 1 - tanh^2); exactly +-1 in the tails.
inline float tanh_approx(float u) { return 1.0f - 2.0f / (1.0f + exp_approx(2.0f * u)); }

// GELU, tanh approximation (GPT-2): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), and its derivative.
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
inline float gelu(float x) { return 0.5f * x * (1.0f + tanh_approx(kGeluScale * (x + 0.044715f * x * x * x))); }
inline float gelu_derivative(float x) {
  const float th = tanh_approx(kGeluScale * (x + 0.044715f * x * x * x));
  const float sech2 = 1.0f - th * th;
  return 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
}

// Reductions over a row: kLanes partial results, element i into partial i % kLanes, then a fixed
// tree (partial j += partial j + w for w = 8, 4, 2, 1).
constexpr int kLanes = 16;

inline float combine_sums(float (&acc)[kLanes]) {
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

inline float sum_lanes(const float* x, int n) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j];
  for (int j = 0; i + j < n; ++j) acc[j] += x[i + j];
  return combine_sums(acc);
}

inline float dot_lanes(const float* x, const float* y, int n) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j] * y[i + j];
  for (int j = 0; i + j < n; ++j) acc[j] += x[i + j] * y[i + j];
  return combine_sums(acc);
}

// max of x[0..n), n >= 1 (a NaN element is skipped, as by `if (x > m) m = x`). The main loop's
// float ?: compiles to one maxss a lane (whose NaN and signed-zero rules are exactly this ?:), no
// branch: twice as fast as the bit select there (measured, softmax rows of 1-256); GCC vectorises
// neither without -ffinite-math-only.
inline float max_lanes(const float* x, int n) {
  float acc[kLanes];
  for (int j = 0; j < kLanes; ++j) acc[j] = x[0];
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  for (int j = 0; i + j < n; ++j) acc[j] = select(x[i + j] > acc[j], x[i + j], acc[j]);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] = select(acc[j + w] > acc[j], acc[j + w], acc[j]);
  return acc[0];
}

}  // namespace zero::gpt
