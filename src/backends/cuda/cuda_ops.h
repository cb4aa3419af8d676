// Internal to the CUDA files: the element-wise kernels of the cuda device and the NCCL
// communicator, on device addresses, issued to a CUDA stream (asynchronous unless said).
//
// Each computes exactly what its CPU counterpart does (device/host_ops.cpp, comm/reduce.cpp):
// 16-bit elements widened to f32, one f32 operation rounded to nearest even (__fadd_rn,
// __fmul_rn, __fdiv_rn: no contraction, IEEE division), stored back rounded once through
// cuda_half.cuh, which has common/half.h's bits. So every result is the CPU's, bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/dtype.h"

namespace zero::cuda_ops {

void fill(void* x, std::size_t n, Dtype d, float value, cudaStream_t s);
void add(void* dst, Dtype dst_dtype, const void* src, Dtype src_dtype, std::size_t n, cudaStream_t s);
void divide(void* x, std::size_t n, Dtype d, float divisor, cudaStream_t s);
void scale(void* x, std::size_t n, Dtype d, float factor, cudaStream_t s);
void convert(void* dst, Dtype dst_dtype, const void* src, Dtype src_dtype, std::size_t n, cudaStream_t s);
// True if any element is an infinity or a NaN; waits for the stream.
bool nonfinite(const void* x, std::size_t n, Dtype d, cudaStream_t s);
// out[i] = pieces[0][i] + pieces[1][i] + ... + pieces[ranks-1][i] in rank order (comm/reduce.h),
// where piece j is the k elements at pieces + j * k; out may be any piece.
void sum_in_rank_order(const void* pieces, int ranks, std::size_t k, void* out, Dtype d, cudaStream_t s);
// acc + the sum of x[i]^2 in double, left to right, with the CPU loop's bits (exact_sum.h); waits
// for the stream.
double sum_squares(const void* x, std::size_t n, Dtype d, double acc, cudaStream_t s);

}  // namespace zero::cuda_ops
