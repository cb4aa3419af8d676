// The GPT's CUDA kernels (gpt_cuda_kernels.h). Built with -fmad=false, IEEE division and square
// root: each thread's arithmetic is the CPU's, operation for operation, wherever the CPU's order
// is followed (the per-channel reductions); row reductions use a warp's or a block's fixed tree
// instead of the CPU's 16 lanes, so they agree to rounding, run to run the same bits.
#include <cuda_bf16.h>

#include <cstdint>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/gpt_cuda_kernels.h"

namespace zero::gpt::cuda {
namespace {

constexpr int kThreads = 256;            // threads per block of the element-wise and per-channel kernels
constexpr int kWarp = 32;
constexpr int kRowsPerBlock = kThreads / kWarp;  // warp-per-row kernels
// The per-channel reductions have one thread per channel (C or OC of them, a few thousand at most):
// a warp per block spreads them over as many multiprocessors as there are warps.
constexpr int kChannelThreads = kWarp;
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi), as vector_math.h

unsigned blocks_for(std::int64_t n, int per_block) { return static_cast<unsigned>((n + per_block - 1) / per_block); }

__device__ std::int64_t global_index() { return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }

// The sum (or max) over a warp, the same in every lane: a butterfly, a fixed order.
__device__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

__global__ void encoder_forward_kernel(float* out, const std::int32_t* tokens, const float* wte, const float* wpe, int T,
                                       int C, std::int64_t n) {
  const std::int64_t i = global_index();
  if (i >= n) return;
  const std::int64_t bt = i / C;
  const int c = static_cast<int>(i % C), t = static_cast<int>(bt % T);
  out[i] = wte[static_cast<std::int64_t>(tokens[bt]) * C + c] + wpe[static_cast<std::int64_t>(t) * C + c];
}

// One thread per channel, the positions in order: a token seen twice adds in a fixed order, the
// CPU's, and no two threads touch one element.
__global__ void encoder_backward_kernel(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, int BT,
                                        int T, int C) {
  const std::int64_t c = global_index();
  if (c >= C) return;
  for (int bt = 0; bt < BT; ++bt) {
    const float d = dout[static_cast<std::int64_t>(bt) * C + c];
    dwte[static_cast<std::int64_t>(tokens[bt]) * C + c] += d;
    dwpe[static_cast<std::int64_t>(bt % T) * C + c] += d;
  }
}

// One warp per row: the mean, then the variance about it (two passes, as the CPU).
__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                         const float* b, int N, int C) {
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (n >= N) return;
  const float* x = inp + n * C;
  float s = 0.0f;
  for (int i = lane; i < C; i += kWarp) s += x[i];
  const float m = warp_sum(s) / C;
  float v = 0.0f;
  for (int i = lane; i < C; i += kWarp) v += (x[i] - m) * (x[i] - m);
  const float r = 1.0f / sqrtf(warp_sum(v) / C + 1e-5f);
  float* o = out + n * C;
  for (int i = lane; i < C; i += kWarp) o[i] = (r * (x[i] - m)) * w[i] + b[i];
  if (lane == 0) {
    mean[n] = m;
    rstd[n] = r;
  }
}

// dx += (dnorm - mean(dnorm) - norm mean(dnorm norm)) rstd, one warp per row.
__global__ void layernorm_backward_input_kernel(float* dinp, const float* dout, const float* inp, const float* w,
                                                const float* mean, const float* rstd, int N, int C) {
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (n >= N) return;
  const float* d = dout + n * C;
  const float* x = inp + n * C;
  const float m = mean[n], s = rstd[n];
  float a1 = 0.0f, a2 = 0.0f;
  for (int i = lane; i < C; i += kWarp) {
    const float dnorm = w[i] * d[i];
    a1 += dnorm;
    a2 += dnorm * ((x[i] - m) * s);
  }
  const float dnorm_mean = warp_sum(a1) / C, dnorm_norm_mean = warp_sum(a2) / C;
  float* dx = dinp + n * C;
  for (int i = lane; i < C; i += kWarp) dx[i] += (w[i] * d[i] - dnorm_mean - ((x[i] - m) * s) * dnorm_norm_mean) * s;
}

// dw, db: one thread per channel over the rows in order, into a local sum added once (the CPU's).
__global__ void layernorm_backward_params_kernel(float* dw, float* db, const float* dout, const float* inp,
                                                 const float* mean, const float* rstd, int N, int C) {
  const std::int64_t i = global_index();
  if (i >= C) return;
  float sw = 0.0f, sb = 0.0f;
  for (int n = 0; n < N; ++n) {
    const std::int64_t at = static_cast<std::int64_t>(n) * C + i;
    sw += ((inp[at] - mean[n]) * rstd[n]) * dout[at];
    sb += dout[at];
  }
  dw[i] += sw;
  db[i] += sb;
}

__global__ void add_bias_kernel(float* out, const float* bias, int OC, std::int64_t n) {
  const std::int64_t i = global_index();
  if (i < n) out[i] += bias[i % OC];
}

__global__ void column_sums_kernel(float* dbias, const float* dout, int N, int OC) {
  const std::int64_t j = global_index();
  if (j >= OC) return;
  float s = 0.0f;
  for (int n = 0; n < N; ++n) s += dout[static_cast<std::int64_t>(n) * OC + j];
  dbias[j] += s;
}

// a[0..k) = softmax(pre[0..k)), a[k..T) = 0, k = r % T + 1; one warp per row.
__global__ void softmax_causal_kernel(float* att, const float* preatt, std::int64_t rows, int T) {
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (r >= rows) return;
  const int k = static_cast<int>(r % T) + 1;
  const float* pre = preatt + r * T;
  float* a = att + r * T;
  float top = pre[0];
  for (int i = lane; i < k; i += kWarp) top = pre[i] > top ? pre[i] : top;
  top = warp_max(top);
  float s = 0.0f;
  for (int i = lane; i < k; i += kWarp) {
    a[i] = expf(pre[i] - top);
    s += a[i];
  }
  const float sum = warp_sum(s);
  const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
  for (int i = lane; i < T; i += kWarp) a[i] = i < k ? a[i] * inv : 0.0f;
}

// dpre[i] = a[i] (da[i] - sum_j a[j] da[j]) for i < k, 0 beyond; one warp per row.
__global__ void softmax_causal_backward_kernel(float* dpreatt, const float* att, const float* datt, std::int64_t rows, int T) {
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (r >= rows) return;
  const int k = static_cast<int>(r % T) + 1;
  const float* a = att + r * T;
  const float* da = datt + r * T;
  float s = 0.0f;
  for (int i = lane; i < k; i += kWarp) s += a[i] * da[i];
  const float dot = warp_sum(s);
  float* dp = dpreatt + r * T;
  for (int i = lane; i < T; i += kWarp) dp[i] = i < k ? a[i] * (da[i] - dot) : 0.0f;
}

__device__ float gelu_tanh(float x) { return tanhf(kGeluScale * (x + 0.044715f * x * x * x)); }

__global__ void gelu_forward_kernel(float* out, const float* inp, std::int64_t n) {
  const std::int64_t i = global_index();
  if (i >= n) return;
  const float x = inp[i];
  out[i] = 0.5f * x * (1.0f + gelu_tanh(x));
}

__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout, std::int64_t n) {
  const std::int64_t i = global_index();
  if (i >= n) return;
  const float x = inp[i], th = gelu_tanh(x);
  const float sech2 = 1.0f - th * th;
  dinp[i] = (0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x)) * dout[i];
}

__global__ void residual_forward_kernel(float* out, const float* a, const float* b, std::int64_t n) {
  const std::int64_t i = global_index();
  if (i < n) out[i] = a[i] + b[i];
}

// One block per row: the max, exp(x - max) summed in double (the CPU sums in double too), each
// by a block's fixed tree; probs = exp * (1 / sum), loss = -log probs[target].
__global__ void softmax_crossentropy_forward_kernel(float* probs, float* losses, const float* logits,
                                                    const std::int32_t* targets, int V) {
  __shared__ float top_part[kThreads];
  __shared__ double sum_part[kThreads];
  const std::int64_t n = blockIdx.x;
  const float* x = logits + n * V;
  float* p = probs + n * V;
  float top = -INFINITY;
  for (int i = threadIdx.x; i < V; i += kThreads) top = x[i] > top ? x[i] : top;
  top_part[threadIdx.x] = top;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w && top_part[threadIdx.x + w] > top_part[threadIdx.x]) top_part[threadIdx.x] = top_part[threadIdx.x + w];
    __syncthreads();
  }
  const float maxv = top_part[0];
  double s = 0.0;
  for (int i = threadIdx.x; i < V; i += kThreads) {
    p[i] = expf(x[i] - maxv);
    s += p[i];
  }
  sum_part[threadIdx.x] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) sum_part[threadIdx.x] += sum_part[threadIdx.x + w];
    __syncthreads();
  }
  const float inv = static_cast<float>(1.0 / sum_part[0]);
  for (int i = threadIdx.x; i < V; i += kThreads) p[i] *= inv;
  __syncthreads();  // p[target] is another thread's
  if (threadIdx.x == 0) losses[n] = -logf(p[targets[n]]);
}

__global__ void softmax_crossentropy_backward_kernel(float* dlogits, const float* probs, const std::int32_t* targets, int V,
                                                     float inv_n, std::int64_t n) {
  const std::int64_t i = global_index();
  if (i >= n) return;
  const std::int64_t row = i / V;
  const int v = static_cast<int>(i % V);
  dlogits[i] = (probs[i] - (v == targets[row] ? 1.0f : 0.0f)) * inv_n;
}

__global__ void round_to_bf16_kernel(__nv_bfloat16* dst, const float* src, std::int64_t n) {
  const std::int64_t i = global_index();
  if (i < n) dst[i] = __float2bfloat16_rn(src[i]);
}

}  // namespace

void encoder_forward(cudaStream_t s, float* out, const std::int32_t* tokens, const float* wte, const float* wpe, int B,
                     int T, int C) {
  const std::int64_t n = static_cast<std::int64_t>(B) * T * C;
  encoder_forward_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(out, tokens, wte, wpe, T, C, n);
  launch_check("encoder_forward");
}

void encoder_backward(cudaStream_t s, float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, int B,
                      int T, int C) {
  encoder_backward_kernel<<<blocks_for(C, kChannelThreads), kChannelThreads, 0, s>>>(dwte, dwpe, dout, tokens, B * T, T, C);
  launch_check("encoder_backward");
}

void layernorm_forward(cudaStream_t s, float* out, float* mean, float* rstd, const float* inp, const float* w,
                       const float* b, int N, int C) {
  layernorm_forward_kernel<<<blocks_for(N, kRowsPerBlock), kThreads, 0, s>>>(out, mean, rstd, inp, w, b, N, C);
  launch_check("layernorm_forward");
}

void layernorm_backward(cudaStream_t s, float* dinp, float* dw, float* db, const float* dout, const float* inp,
                        const float* w, const float* mean, const float* rstd, int N, int C) {
  layernorm_backward_params_kernel<<<blocks_for(C, kChannelThreads), kChannelThreads, 0, s>>>(dw, db, dout, inp, mean, rstd, N, C);
  launch_check("layernorm_backward (parameters)");
  layernorm_backward_input_kernel<<<blocks_for(N, kRowsPerBlock), kThreads, 0, s>>>(dinp, dout, inp, w, mean, rstd, N, C);
  launch_check("layernorm_backward (input)");
}

void add_bias(cudaStream_t s, float* out, const float* bias, int N, int OC) {
  const std::int64_t n = static_cast<std::int64_t>(N) * OC;
  add_bias_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(out, bias, OC, n);
  launch_check("matmul bias");
}

void column_sums(cudaStream_t s, float* dbias, const float* dout, int N, int OC) {
  column_sums_kernel<<<blocks_for(OC, kChannelThreads), kChannelThreads, 0, s>>>(dbias, dout, N, OC);
  launch_check("matmul bias gradient");
}

void softmax_causal(cudaStream_t s, float* att, const float* preatt, std::int64_t rows, int T) {
  softmax_causal_kernel<<<blocks_for(rows, kRowsPerBlock), kThreads, 0, s>>>(att, preatt, rows, T);
  launch_check("attention softmax");
}

void softmax_causal_backward(cudaStream_t s, float* dpreatt, const float* att, const float* datt, std::int64_t rows, int T) {
  softmax_causal_backward_kernel<<<blocks_for(rows, kRowsPerBlock), kThreads, 0, s>>>(dpreatt, att, datt, rows, T);
  launch_check("attention softmax backward");
}

void gelu_forward(cudaStream_t s, float* out, const float* inp, std::int64_t n) {
  gelu_forward_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(out, inp, n);
  launch_check("gelu_forward");
}

void gelu_backward(cudaStream_t s, float* dinp, const float* inp, const float* dout, std::int64_t n) {
  gelu_backward_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(dinp, inp, dout, n);
  launch_check("gelu_backward");
}

void residual_forward(cudaStream_t s, float* out, const float* a, const float* b, std::int64_t n) {
  residual_forward_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(out, a, b, n);
  launch_check("residual_forward");
}

void softmax_crossentropy_forward(cudaStream_t s, float* probs, float* losses, const float* logits,
                                  const std::int32_t* targets, int N, int V) {
  softmax_crossentropy_forward_kernel<<<static_cast<unsigned>(N), kThreads, 0, s>>>(probs, losses, logits, targets, V);
  launch_check("softmax_crossentropy_forward");
}

void softmax_crossentropy_backward(cudaStream_t s, float* dlogits, const float* probs, const std::int32_t* targets, int N,
                                   int V) {
  const std::int64_t n = static_cast<std::int64_t>(N) * V;
  const float inv_n = 1.0f / static_cast<float>(N);
  softmax_crossentropy_backward_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(dlogits, probs, targets, V, inv_n, n);
  launch_check("softmax_crossentropy_backward");
}

void round_to_bf16(cudaStream_t s, void* dst, const float* src, std::int64_t n) {
  round_to_bf16_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(dst), src, n);
  launch_check("round_to_bf16");
}

}  // namespace zero::gpt::cuda
