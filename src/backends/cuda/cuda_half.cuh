// Internal to the CUDA files: common/half.h's conversions on the GPU, the same bit operations in
// the same order, so a GPU rounds to bf16/fp16 exactly as the CPU does (NaNs included).
#pragma once

#include <cstdint>

#include "common/dtype.h"

namespace zero::cuda_half {

__device__ __forceinline__ std::uint16_t to_bf16(float x) {
  const std::uint32_t u = __float_as_uint(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ std::uint16_t to_fp16(float x) {
  const std::uint32_t u = __float_as_uint(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  std::uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x03FFu));
  if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (a >= 0x38800000u) {
    a -= 0x38000000u;
    return static_cast<std::uint16_t>(sign | ((a + 0x0FFFu + ((a >> 13) & 1u)) >> 13));
  }
  const std::uint32_t e = a >> 23;
  if (e < 102) return static_cast<std::uint16_t>(sign);
  const std::uint32_t mant = (a & 0x007FFFFFu) | 0x00800000u;
  const std::uint32_t shift = 126 - e;
  std::uint32_t k = mant >> shift;
  const std::uint32_t rem = mant & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (k & 1u))) ++k;
  return static_cast<std::uint16_t>(sign | k);
}

__device__ __forceinline__ float from_bf16(std::uint16_t h) { return __uint_as_float(static_cast<std::uint32_t>(h) << 16); }

__device__ __forceinline__ float from_fp16(std::uint16_t h) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu;
  const std::uint32_t mant = h & 0x03FFu;
  if (e == 0x1F) return __uint_as_float(sign | 0x7F800000u | (mant << 13));
  if (e != 0) return __uint_as_float(sign | ((e + 112) << 23) | (mant << 13));
  const float magnitude = __fmul_rn(static_cast<float>(mant), 0x1p-24f);
  return sign ? -magnitude : magnitude;
}

// Element i of a run of `d` as f32, and a value stored rounded to `d`.
__device__ __forceinline__ float load(const void* p, std::size_t i, Dtype d) {
  if (d == Dtype::kF32) return static_cast<const float*>(p)[i];
  const std::uint16_t h = static_cast<const std::uint16_t*>(p)[i];
  return d == Dtype::kBf16 ? from_bf16(h) : from_fp16(h);
}

__device__ __forceinline__ void store(void* p, std::size_t i, Dtype d, float x) {
  if (d == Dtype::kF32) {
    static_cast<float*>(p)[i] = x;
  } else {
    static_cast<std::uint16_t*>(p)[i] = d == Dtype::kBf16 ? to_bf16(x) : to_fp16(x);
  }
}

}  // namespace zero::cuda_half
