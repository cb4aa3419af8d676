#include "common/dtype.h"

#include <cstring>

#include "common/half.h"
#include "common/vector_clones.h"

namespace zero {
namespace {

// The conversions' loops, vectorised: the engine widens and narrows whole units every step (mixed
// precision's compute copies and gradient adds), and the baseline's loops were a visible part of
// a bf16 step. Integer work (bf16) or the reference conversion per element (fp16): the same bits
// in every clone.
ZERO_VECTOR_CLONES void widen_bf16(const std::uint16_t* h, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_float(h[i]);
}
ZERO_VECTOR_CLONES void widen_fp16(const std::uint16_t* h, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = fp16_to_float(h[i]);
}
ZERO_VECTOR_CLONES void narrow_bf16(const float* src, std::uint16_t* h, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) h[i] = float_to_bf16(src[i]);
}
ZERO_VECTOR_CLONES void narrow_fp16(const float* src, std::uint16_t* h, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) h[i] = float_to_fp16(src[i]);
}

}  // namespace

std::size_t dtype_bytes(Dtype d) { return d == Dtype::kF32 ? 4 : 2; }

const char* dtype_label(Dtype d) {
  switch (d) {
    case Dtype::kF32: return "f32";
    case Dtype::kBf16: return "bf16";
    default: return "f16";
  }
}

const char* dtype_deepspeed_name(Dtype d) {
  switch (d) {
    case Dtype::kF32: return "fp32";
    case Dtype::kBf16: return "bf16";
    default: return "fp16";
  }
}

bool is_16bit(Dtype d) { return d != Dtype::kF32; }

void widen_to_f32(const void* src, Dtype d, float* out, std::size_t n) {
  const auto* h = static_cast<const std::uint16_t*>(src);
  switch (d) {
    case Dtype::kF32: std::memmove(out, src, n * sizeof(float)); return;
    case Dtype::kBf16: return widen_bf16(h, out, n);
    case Dtype::kF16: return widen_fp16(h, out, n);
  }
}

void narrow_from_f32(const float* src, Dtype d, void* out, std::size_t n) {
  auto* h = static_cast<std::uint16_t*>(out);
  switch (d) {
    case Dtype::kF32: std::memmove(out, src, n * sizeof(float)); return;
    case Dtype::kBf16: return narrow_bf16(src, h, n);
    case Dtype::kF16: return narrow_fp16(src, h, n);
  }
}

}  // namespace zero
