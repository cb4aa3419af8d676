// The CUDA Adam/AdamW step: adam_reference's operations in its order on the GPU, so the step is
// bit-identical to the CPU reference (and so to the CPU Adam): the fused multiply-adds are the
// reference's std::fma, written as __fmaf_rn, and nothing else is fused (this file's unit is
// compiled with -fmad=false; products, quotients and square roots are __fmul_rn, __fdiv_rn and
// __fsqrt_rn: IEEE, correctly rounded). Elements are independent, so the grid does not matter.
// NaN and Inf propagate as in the reference (see optim/cpu_adam.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/dtype.h"
#include "optim/adamw.h"

namespace zero {

// One step over n elements on device memory, issued to `stream`. g is f32 or 16-bit (widened
// exactly); `copy`, if not null, receives the updated parameters rounded to copy_dtype (bf16 or
// f16, to nearest even, common/half.h's bits).
void cuda_adam_step(const AdamStep& s, bool decay, float* p, const void* g, Dtype g_dtype, float* m, float* v, void* copy,
                    Dtype copy_dtype, std::size_t n, cudaStream_t stream);

}  // namespace zero
