// OpenBLAS's cblas_sgemm behind matmul.h: f32 operands and accumulation. OpenBLAS keeps its own
// thread pool (one thread per rank as zero launches it: cli/launch.cpp) and its own kernel set
// (blas_core.h).
#include <cblas.h>

#include "backends/cpu/matmul.h"
#include "common/error.h"

namespace zero {
namespace {

CBLAS_TRANSPOSE op(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

class OpenblasMatmul final : public Matmul {
 public:
  MatmulKind kind() const override { return MatmulKind::kOpenblasF32; }
  void run(int M, int N, int K, float alpha, MatmulOperand a, MatmulOperand b, float beta, float* c, int ldc) override {
    ZERO_CHECK(a.bf16 == nullptr && b.bf16 == nullptr, "OpenBLAS's f32 products given a bf16 operand");
    cblas_sgemm(CblasRowMajor, op(a.trans), op(b.trans), M, N, K, alpha, a.p, a.ld, b.p, b.ld, beta, c, ldc);
  }
};

}  // namespace

std::unique_ptr<Matmul> make_openblas_matmul() { return std::make_unique<OpenblasMatmul>(); }

}  // namespace zero
