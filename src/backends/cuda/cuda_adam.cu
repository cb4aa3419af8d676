#include "backends/cuda/cuda_adam.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_half.cuh"

namespace zero {
namespace {

enum class Decay : int { kNone, kL2, kDecoupled };

// adam_reference's loop body, operation for operation.
template <Decay kDecay>
__global__ void adam_kernel(AdamStep s, float* p, const void* g, Dtype g_dtype, float* m, float* v, void* copy,
                            Dtype copy_dtype, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    float gi = cuda_half::load(g, i, g_dtype);
    float pi = p[i];
    if constexpr (kDecay == Decay::kL2) gi = __fmaf_rn(s.weight_decay, pi, gi);
    const float mi = __fmaf_rn(s.beta1, m[i], __fmul_rn(s.one_minus_beta1, gi));
    const float vi = __fmaf_rn(s.beta2, v[i], __fmul_rn(__fmul_rn(s.one_minus_beta2, gi), gi));
    const float denom = __fmaf_rn(__fsqrt_rn(vi), s.inv_sqrt_bc2, s.eps);
    if constexpr (kDecay == Decay::kDecoupled) pi = __fmul_rn(pi, s.decay_factor);
    pi = __fmaf_rn(-s.step_size, __fdiv_rn(mi, denom), pi);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
    if (copy != nullptr) cuda_half::store(copy, i, copy_dtype, pi);
  }
}

}  // namespace

void cuda_adam_step(const AdamStep& s, bool decay, float* p, const void* g, Dtype g_dtype, float* m, float* v, void* copy,
                    Dtype copy_dtype, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  ZERO_CHECK(copy == nullptr || copy_dtype != Dtype::kF32, "the CUDA Adam's copy is 16-bit");
  constexpr int kThreads = 256;
  const std::size_t wanted = (n + kThreads - 1) / kThreads;
  const auto blocks = static_cast<unsigned>(wanted < (1u << 20) ? wanted : (1u << 20));  // grid-stride beyond
  if (decay && !s.decoupled) {
    adam_kernel<Decay::kL2><<<blocks, kThreads, 0, stream>>>(s, p, g, g_dtype, m, v, copy, copy_dtype, n);
  } else if (decay) {
    adam_kernel<Decay::kDecoupled><<<blocks, kThreads, 0, stream>>>(s, p, g, g_dtype, m, v, copy, copy_dtype, n);
  } else {
    adam_kernel<Decay::kNone><<<blocks, kThreads, 0, stream>>>(s, p, g, g_dtype, m, v, copy, copy_dtype, n);
  }
  cuda_check_launch("the CUDA Adam");
}

}  // namespace zero
