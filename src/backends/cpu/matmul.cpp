// The one factory of matmul.h, the run's choice between its implementations, and the rounding
// of bf16 operands.
#include "backends/cpu/matmul.h"

#include <cstdint>

// As gpt_kernels.cpp: AVX-512, AVX2 and baseline clones, picked by the loader for this CPU.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define ZERO_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ZERO_VECTOR_CLONES
#endif

namespace zero {
namespace {

// Rows with at least this many elements in all are rounded over the OpenMP threads; fewer (an
// attention block's operands) in one go, without a parallel region's cost.
constexpr std::int64_t kParallelRound = std::int64_t{1} << 16;

// float_to_bf16 without its branch, so that the loop vectorises: the same bits for every input
// (round to nearest even; NaN kept quiet with its sign and top payload bits).
ZERO_VECTOR_CLONES void round_span_to_bf16(std::uint16_t* d, const float* s, int n) {
  for (int i = 0; i < n; ++i) {
    const std::uint32_t u = __builtin_bit_cast(std::uint32_t, s[i]);
    const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16, quiet_nan = (u >> 16) | 0x0040u;
    d[i] = static_cast<std::uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
  }
}

}  // namespace

void round_rows_to_bf16(std::uint16_t* dst, const float* src, int rows, int cols, int ld) {
#pragma omp parallel for schedule(static) if (static_cast<std::int64_t>(rows) * cols >= kParallelRound)
  for (int r = 0; r < rows; ++r) {
    round_span_to_bf16(dst + static_cast<std::int64_t>(r) * cols, src + static_cast<std::int64_t>(r) * ld, cols);
  }
}

std::unique_ptr<Matmul> make_openblas_matmul();                // matmul_openblas.cpp
std::unique_ptr<Matmul> make_onednn_matmul(MatmulKind kind);  // matmul_onednn.cpp
std::string onednn_isa_name();                                // matmul_onednn.cpp

std::unique_ptr<Matmul> make_matmul(MatmulKind kind) {
  return kind == MatmulKind::kOpenblasF32 ? make_openblas_matmul() : make_onednn_matmul(kind);
}

MatmulKind choose_matmul(Dtype operands) {
  return operands == Dtype::kBf16 && bf16_products_available() ? MatmulKind::kOnednnBf16 : MatmulKind::kOpenblasF32;
}

std::string matmul_label(MatmulKind kind) {
  switch (kind) {
    case MatmulKind::kOpenblasF32: return "f32 matrix products (OpenBLAS)";
    case MatmulKind::kOnednnF32: return "f32 matrix products (oneDNN)";
    case MatmulKind::kOnednnBf16: return "bf16 matrix products (oneDNN, " + onednn_isa_name() + ")";
  }
  return "";
}

// The cpu backend's describe_matmul (registry.h): what the cpu table's choices give.
std::string describe_cpu_matmul(Dtype operands) {
  const MatmulKind layers = choose_matmul(operands);
  return layers == kAttentionMatmul ? matmul_label(layers) : matmul_label(layers) + ", attention's f32 (OpenBLAS)";
}

}  // namespace zero
