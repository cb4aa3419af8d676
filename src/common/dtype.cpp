#include "common/dtype.h"

#include <cstring>

#include "common/half.h"

namespace zero {

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
    case Dtype::kBf16:
      for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_float(h[i]);
      return;
    case Dtype::kF16:
      for (std::size_t i = 0; i < n; ++i) out[i] = fp16_to_float(h[i]);
      return;
  }
}

void narrow_from_f32(const float* src, Dtype d, void* out, std::size_t n) {
  auto* h = static_cast<std::uint16_t*>(out);
  switch (d) {
    case Dtype::kF32: std::memmove(out, src, n * sizeof(float)); return;
    case Dtype::kBf16:
      for (std::size_t i = 0; i < n; ++i) h[i] = float_to_bf16(src[i]);
      return;
    case Dtype::kF16:
      for (std::size_t i = 0; i < n; ++i) h[i] = float_to_fp16(src[i]);
      return;
  }
}

}  // namespace zero
