// The one factory of matmul.h and the run's choice between its implementations.
#include "backends/cpu/matmul.h"

namespace zero {

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
    case MatmulKind::kOpenblasF32: return "OpenBLAS f32";
    case MatmulKind::kOnednnF32: return "oneDNN f32";
    case MatmulKind::kOnednnBf16: return "oneDNN bf16 (" + onednn_isa_name() + ")";
  }
  return "";
}

}  // namespace zero
