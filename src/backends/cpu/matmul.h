// The CPU kernels' matrix products behind one small interface, so that the GPT's and LLaMA's
// layers and attention (gpt_kernels.cpp) ask for a product and the run decides once how it is
// computed:
//   kOpenblasF32  OpenBLAS cblas_sgemm: f32 operands, f32 accumulation (matmul_openblas.cpp).
//   kOnednnF32    oneDNN's matmul on the same f32 operands (matmul_onednn.cpp).
//   kOnednnBf16   oneDNN's matmul on the operands rounded to bf16 (round to nearest even, as
//                 PyTorch's autocast does), products accumulated and stored in f32. Products of
//                 two bf16 values are exact in f32, so this differs from f32 products only by the
//                 rounding of the operands and the order of the f32 sums.
//
// Which one a run uses (choose_matmul): bf16 products where the run's matrix products are bf16
// (mixed precision) and the CPU has bf16 dot-product instructions (AVX512_BF16 or AMX, as oneDNN
// sees it: bf16_products_available); everywhere else f32 products through OpenBLAS. OpenBLAS,
// not oneDNN, for f32: measured here (zero_bench_matmul, one thread, the 50m bench model's
// products; bench/README.md, "bf16 matrix products on the CPU"), the two tie on the linear layers'
// forward (62 against 64 GFLOP/s) and OpenBLAS is ahead on their input and weight gradients (62
// and 59 against 52 and 53) and on attention's blocks (79 against 72); it also keeps fp32 runs'
// bits what they were. bf16 products: 106-113 GFLOP/s on the same linear products (AVX512-BF16).
//
// Attention's products (64-row blocks per head) stay f32 through OpenBLAS in bf16 runs too
// (kAttentionMatmul), unlike PyTorch's autocast, which runs torch.bmm in bf16: measured here, oneDNN's
// bf16 blocks with their operands rounded per block reach 64-69 GFLOP/s against OpenBLAS's 78-81;
// the rounding and the per-call cost eat the faster dot products at these sizes. (Rounding q, k, v
// and att once per call instead of once per block is what would change that.)
//
// Every implementation computes each element in a fixed order for a given shape and thread
// count, so ranks and stages computing the same product get the same bits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/dtype.h"

namespace zero {

// A row-major operand: op(X) = X^T where `trans`; `ld` elements between the stored rows. Either
// f32 values (`p`), or, for a kOnednnBf16 product only, values already in bf16 (`bf16`, p null):
// a bf16 run's weights as the engine holds them, which oneDNN then reads as they are. Rounding a
// bf16 value widened to f32 gives it back exactly, so both give the same product, bit for bit.
struct MatmulOperand {
  const float* p;
  int ld;
  bool trans;
  const std::uint16_t* bf16 = nullptr;
};

enum class MatmulKind : std::uint8_t { kOpenblasF32, kOnednnF32, kOnednnBf16 };

class Matmul {
 public:
  virtual ~Matmul() = default;
  // c (M,N) = alpha op(a) (M,K) op(b) (K,N) + beta c, c's rows ldc apart; beta 0: c is not read.
  // Runs on the calling thread's OpenMP threads (oneDNN) or OpenBLAS's own; not from inside an
  // OpenMP parallel region.
  virtual void run(int M, int N, int K, float alpha, MatmulOperand a, MatmulOperand b, float beta, float* c, int ldc) = 0;
  virtual MatmulKind kind() const = 0;
};

std::unique_ptr<Matmul> make_matmul(MatmulKind kind);

// Attention's products in every run (see the top).
constexpr MatmulKind kAttentionMatmul = MatmulKind::kOpenblasF32;

// True where oneDNN's effective instruction set has bf16 dot products (AVX512_BF16, or AMX); it
// honours DNNL_MAX_CPU_ISA, so `DNNL_MAX_CPU_ISA=AVX512_CORE` shows a run without them.
bool bf16_products_available();
// The products of a run whose matrix products are `operands` (GptCompute::matmul): see the top.
MatmulKind choose_matmul(Dtype operands);
// "f32 matrix products (OpenBLAS)", "bf16 matrix products (oneDNN, AVX512-BF16)", ...
std::string matmul_label(MatmulKind kind);

// dst (rows, cols; dense) = src (rows, cols; rows ld apart) rounded to bf16: float_to_bf16's bits
// (common/half.h, its scalar twin), vectorised; OpenMP over rows for large matrices.
void round_rows_to_bf16(std::uint16_t* dst, const float* src, int rows, int cols, int ld);

}  // namespace zero
