#include "backends/cuda/cuda_ops.h"

#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_half.cuh"

namespace zero::cuda_ops {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 16 ? (b == 0 ? 1 : b) : 65535 * 16);  // grid-stride beyond
}

enum class Op : int { kFill, kDivide, kScale };

__global__ void update_kernel(void* x, std::size_t n, Dtype d, Op op, float c) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    float v = c;
    if (op == Op::kDivide) v = __fdiv_rn(cuda_half::load(x, i, d), c);
    if (op == Op::kScale) v = __fmul_rn(cuda_half::load(x, i, d), c);
    cuda_half::store(x, i, d, v);
  }
}

__global__ void add_kernel(void* dst, Dtype dd, const void* src, Dtype sd, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    cuda_half::store(dst, i, dd, __fadd_rn(cuda_half::load(dst, i, dd), cuda_half::load(src, i, sd)));
  }
}

__global__ void convert_kernel(void* dst, Dtype dd, const void* src, Dtype sd, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    cuda_half::store(dst, i, dd, cuda_half::load(src, i, sd));
  }
}

__global__ void nonfinite_kernel(const void* x, std::size_t n, Dtype d, int* found) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    if (!isfinite(cuda_half::load(x, i, d))) *found = 1;  // any writer; the value is all that matters
  }
}

__global__ void rank_sum_kernel(const void* pieces, int ranks, std::size_t k, void* out, Dtype d) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < k; i += std::size_t{gridDim.x} * blockDim.x) {
    float acc = cuda_half::load(pieces, i, d);
    for (int j = 1; j < ranks; ++j) acc = __fadd_rn(acc, cuda_half::load(pieces, j * k + i, d));
    cuda_half::store(out, i, d, acc);
  }
}

void update(void* x, std::size_t n, Dtype d, Op op, float c, cudaStream_t s) {
  if (n == 0) return;
  update_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, d, op, c);
  cuda_check_launch("an element-wise kernel");
}

}  // namespace

void fill(void* x, std::size_t n, Dtype d, float value, cudaStream_t s) { update(x, n, d, Op::kFill, value, s); }
void divide(void* x, std::size_t n, Dtype d, float divisor, cudaStream_t s) { update(x, n, d, Op::kDivide, divisor, s); }
void scale(void* x, std::size_t n, Dtype d, float factor, cudaStream_t s) { update(x, n, d, Op::kScale, factor, s); }

void add(void* dst, Dtype dst_dtype, const void* src, Dtype src_dtype, std::size_t n, cudaStream_t s) {
  if (n == 0) return;
  add_kernel<<<blocks_for(n), kThreads, 0, s>>>(dst, dst_dtype, src, src_dtype, n);
  cuda_check_launch("add");
}

void convert(void* dst, Dtype dst_dtype, const void* src, Dtype src_dtype, std::size_t n, cudaStream_t s) {
  if (n == 0) return;
  if (dst_dtype == src_dtype) {
    cuda_check(cudaMemcpyAsync(dst, src, n * dtype_bytes(src_dtype), cudaMemcpyDefault, s), "convert (a copy)");
    return;
  }
  convert_kernel<<<blocks_for(n), kThreads, 0, s>>>(dst, dst_dtype, src, src_dtype, n);
  cuda_check_launch("convert");
}

bool nonfinite(const void* x, std::size_t n, Dtype d, cudaStream_t s) {
  if (n == 0) return false;
  int* found = nullptr;
  cuda_check(cudaMallocAsync(&found, sizeof(int), s), "nonfinite's flag");
  cuda_check(cudaMemsetAsync(found, 0, sizeof(int), s), "nonfinite's flag");
  nonfinite_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, d, found);
  cuda_check_launch("nonfinite");
  int host = 0;
  cuda_check(cudaMemcpyAsync(&host, found, sizeof(int), cudaMemcpyDeviceToHost, s), "nonfinite's result");
  cuda_check(cudaFreeAsync(found, s), "nonfinite's flag");
  cuda_check(cudaStreamSynchronize(s), "nonfinite");
  return host != 0;
}

void sum_in_rank_order(const void* pieces, int ranks, std::size_t k, void* out, Dtype d, cudaStream_t s) {
  if (k == 0) return;
  rank_sum_kernel<<<blocks_for(k), kThreads, 0, s>>>(pieces, ranks, k, out, d);
  cuda_check_launch("the rank-order sum");
}

}  // namespace zero::cuda_ops
