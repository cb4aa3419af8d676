// A linear layer's products with its weight read from the unit views: the unit's own bf16 values
// where the run holds them in bf16 and the kernels take bf16 weights (GptKernels::takes_bf16_weights),
// else the f32 view. Both give the same bits (the bf16 products round the f32 weights to exactly
// those values); the bf16 way skips widening the weights and rounding them back. A model that
// reads a weight only through these may say so in Module::reads_bf16 where takes_bf16_weights().
#pragma once

#include <cstdint>

#include "zero/gpt_kernel_table.h"
#include "zero/module.h"

namespace zero {

// Parameter `index` of unit `unit` as the fused calls take a weight (GptWeight).
inline GptWeight linear_weight(GptKernels& k, const UnitViews& v, int unit, int index) {
  const std::uint16_t* w16 = k.takes_bf16_weights() ? v.param_bf16(unit, index) : nullptr;
  if (w16 != nullptr) return {nullptr, w16};
  return {v.param(unit, index), nullptr};
}

// out (N,OC) = inp (N,C) @ w^T + bias, w = parameter `index` of unit `unit`: (OC,C).
inline void linear_forward(GptKernels& k, const UnitViews& v, int unit, int index, float* out, const float* inp,
                           const float* bias, int N, int C, int OC) {
  k.product_forward(out, inp, linear_weight(k, v, unit, index), bias, N, C, OC);
}

// dinp = dout @ w (overwritten); dw += dout^T @ inp; dbias += column sums of dout (may be null).
inline void linear_backward(GptKernels& k, const UnitViews& v, int unit, int index, float* dinp, float* dw, float* dbias,
                            const float* dout, const float* inp, int N, int C, int OC) {
  k.product_backward(dinp, dw, dbias, dout, inp, linear_weight(k, v, unit, index), N, C, OC);
}

}  // namespace zero
