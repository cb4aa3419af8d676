// qgZ's quantiser (ZeRO++, Wang et al. 2023; DeepSpeed's swizzle_quant / quantized_reduction at 4
// bits, symmetric): gradients travel as 4-bit integers with one f32 scale per block.
//
// Words: a run of n elements is cut into blocks of kGradientBlock elements (the last one shorter
// when n is not a multiple). Per block, m = max |x|, s = m / 7 (f32), and each element becomes
// q = rint(x / s) in [-7, 7] (round half to even, as NumPy's rint); it comes back as q * s. So
// |x - q * s| <= s / 2 = m / 14 for every element. A block of zeros has s = 0 and q = 0. A block
// holding an Inf or a NaN gets s = NaN and q = 0, so every element of it comes back NaN: fp16's
// overflow check still sees the overflow after the reduction.
//
// The bytes of a run ("quantised run"): its ceil(n / kGradientBlock) scales (f32, native byte
// order), then ceil(n / 2) bytes of 4-bit two's complement values, element 2i in the low nibble
// of byte i and element 2i+1 in its high nibble. int4_bytes(n) = 4 ceil(n / 64) + ceil(n / 2).
//
// Why 4 bits: DeepSpeed's qgZ quantises gradients to int4 in both of its all-to-alls (the paper's
// 4x smaller gradient traffic than fp16); zero does the same. Why blocks of 64: DeepSpeed's groups
// are about one row of a weight matrix (max(rows, columns) groups a tensor), so a small model gets
// small groups; zero's flat units do not know rows, and on the default text's small GPT (4 ranks
// as 2 nodes, 200 steps, 5 seeds) blocks of 256 ended 1.6% above exact stage 3's validation loss,
// blocks of 64 0.9% (stage 3's own range over the seeds: 1.4%). A scale per 64 elements costs
// 4/64 of a byte per element, 12.5% over the 0.5 bytes of the values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zero {

inline constexpr std::size_t kGradientBlock = 64;
inline constexpr int kGradientLevels = 7;  // q in [-7, 7]

// The bytes of a quantised run of n elements.
std::size_t int4_bytes(std::size_t n);

// x (n f32) into out (int4_bytes(n) bytes).
void quantize_int4(const float* x, std::size_t n, std::uint8_t* out);

// A quantised run of n elements back into out (n f32).
void dequantize_int4(const std::uint8_t* in, std::size_t n, float* out);

}  // namespace zero
