// Element types of engine memory and of the collectives, and the array conversions between them.
//
// f32 is IEEE binary32; bf16 and f16 are the 16-bit formats of common/half.h, carried as raw
// bits. Widening (16 -> 32) is exact; narrowing (32 -> 16) rounds to nearest, ties to even,
// with half.h's conversions, which are the project's only ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace zero {

enum class Dtype : std::uint8_t { kF32, kBf16, kF16 };

std::size_t dtype_bytes(Dtype d);
const char* dtype_label(Dtype d);  // "f32", "bf16", "f16"
// DeepSpeed's spellings ("fp32", "fp16", "bf16"), for messages and configs.
const char* dtype_deepspeed_name(Dtype d);
bool is_16bit(Dtype d);

// out[i] = src[i] as f32, for n elements of type `d` at src.
void widen_to_f32(const void* src, Dtype d, float* out, std::size_t n);
// out[i] = src[i] rounded to type `d` (round to nearest even); for f32 a copy.
void narrow_from_f32(const float* src, Dtype d, void* out, std::size_t n);

}  // namespace zero
