// 16-bit floating-point formats and their reference conversions.
//
// bf16 (bfloat16): fp32's sign and 8-bit exponent with a 7-bit mantissa.
// fp16 (IEEE binary16): 5-bit exponent (bias 15), 10-bit mantissa, subnormals below 2^-14.
//
// float_to_bf16 and float_to_fp16 are THE conversions of this project: every fast path (the
// fused copy in the CPU Adam kernel, later the CUDA kernels) produces exactly these bits.
//  - Finite values round to nearest, ties to even; values past the largest finite half round
//    to infinity exactly when IEEE round-to-nearest-even says so (fp16: |x| >= 65520).
//  - Subnormal results are produced, not flushed (fp16 below 2^-14; bf16 keeps fp32's range).
//  - Infinities stay infinities with their sign.
//  - NaN stays NaN: the sign and the top payload bits are kept and the quiet bit is set, so a
//    signalling NaN comes out quiet. This is what x86's F16C (VCVTPS2PH) does for fp16.
// Values are carried as raw bits in std::uint16_t; the dtype travels beside them.
//
// always_inline: these are also compiled into files built with AVX flags (the CPU Adam kernels);
// inlined everywhere, no out-of-line copy built with those flags can be shared by the linker
// with callers on CPUs that lack them, even in unoptimised builds. For the same reason they use
// __builtin_bit_cast rather than std::bit_cast, a function template the linker would share.
#pragma once

#include <cstdint>

namespace zero {

enum class HalfFormat : std::uint8_t { kBf16, kFp16 };

inline const char* half_format_name(HalfFormat f) { return f == HalfFormat::kBf16 ? "bf16" : "fp16"; }

[[gnu::always_inline]] inline std::uint16_t float_to_bf16(float x) {
  const std::uint32_t u = __builtin_bit_cast(std::uint32_t, x);
  const std::uint32_t quiet_nan = (u >> 16) | 0x0040u;
  // Adding 0x7FFF plus the lowest kept bit rounds to nearest, ties to even; a carry out of the
  // mantissa bumps the exponent, and out of the largest finite value gives infinity.
  const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  // A select, not a branch, so that loops over this vectorise (narrow_from_f32: the gradient adds).
  return static_cast<std::uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
}

[[gnu::always_inline]] inline std::uint16_t float_to_fp16(float x) {
  const std::uint32_t u = __builtin_bit_cast(std::uint32_t, x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  std::uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x03FFu));  // NaN
  if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520, or Inf
  if (a >= 0x38800000u) {  // a normal fp16 (>= 2^-14): rebias the exponent by 127 - 15, round 13 bits off
    a -= 0x38000000u;
    return static_cast<std::uint16_t>(sign | ((a + 0x0FFFu + ((a >> 13) & 1u)) >> 13));
  }
  // A subnormal fp16 k * 2^-24 (or zero): k = mantissa-with-implicit-bit >> (126 - exponent).
  const std::uint32_t e = a >> 23;
  if (e < 102) return static_cast<std::uint16_t>(sign);  // below 2^-25: rounds to zero
  const std::uint32_t mant = (a & 0x007FFFFFu) | 0x00800000u;
  const std::uint32_t shift = 126 - e;  // 14..24
  std::uint32_t k = mant >> shift;
  const std::uint32_t rem = mant & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (k & 1u))) ++k;  // k may reach 0x400: the smallest normal, correctly
  return static_cast<std::uint16_t>(sign | k);
}

[[gnu::always_inline]] inline float bf16_to_float(std::uint16_t h) {
  return __builtin_bit_cast(float, static_cast<std::uint32_t>(h) << 16);
}

[[gnu::always_inline]] inline float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu;
  const std::uint32_t mant = h & 0x03FFu;
  if (e == 0x1F) return __builtin_bit_cast(float, sign | 0x7F800000u | (mant << 13));  // Inf, NaN
  if (e != 0) return __builtin_bit_cast(float, sign | ((e + 112) << 23) | (mant << 13));
  // Zero or subnormal: mant * 2^-24, exact in fp32.
  const float magnitude = static_cast<float>(mant) * 0x1p-24f;
  return sign ? -magnitude : magnitude;
}

}  // namespace zero
