// The GPT's CUDA kernels other than the matrix products (those are cuBLAS calls in
// gpt_cuda_table.cpp): each launcher issues one kernel to `stream` and returns. Shapes and
// meanings are gpt_kernels.h's; every pointer is GPU memory.
//
// Kept simple rather than fast (what is left for speed is listed in gpt_cuda_table.cpp). Every
// kernel is deterministic: no atomics; each output element is written by one thread, and every
// reduction has a fixed order (a warp's butterfly, a block's tree, or one thread's loop). The
// parameter-gradient reductions (encoder, LayerNorm, bias) run one thread per channel over the
// rows in order, as the CPU's do, so with -fmad=false they give the CPU's bits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace zero::gpt::cuda {

void encoder_forward(cudaStream_t s, float* out, const std::int32_t* tokens, const float* wte, const float* wpe, int B,
                     int T, int C);
void encoder_backward(cudaStream_t s, float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, int B,
                      int T, int C);
void layernorm_forward(cudaStream_t s, float* out, float* mean, float* rstd, const float* inp, const float* w,
                       const float* b, int N, int C);
void layernorm_backward(cudaStream_t s, float* dinp, float* dw, float* db, const float* dout, const float* inp,
                        const float* w, const float* mean, const float* rstd, int N, int C);
// out (N,OC) += bias (OC), per row
void add_bias(cudaStream_t s, float* out, const float* bias, int N, int OC);
// dbias (OC) += column sums of dout (N,OC), rows in order
void column_sums(cudaStream_t s, float* dbias, const float* dout, int N, int OC);
// Causal softmax over `rows` rows of T (row r is query r % T: it sees keys 0..r % T).
void softmax_causal(cudaStream_t s, float* att, const float* preatt, std::int64_t rows, int T);
void softmax_causal_backward(cudaStream_t s, float* dpreatt, const float* att, const float* datt, std::int64_t rows, int T);
void gelu_forward(cudaStream_t s, float* out, const float* inp, std::int64_t n);
void gelu_backward(cudaStream_t s, float* dinp, const float* inp, const float* dout, std::int64_t n);
void residual_forward(cudaStream_t s, float* out, const float* a, const float* b, std::int64_t n);
// probs, losses as gpt_kernels.h; the mean is the caller's (it reads the losses back).
void softmax_crossentropy_forward(cudaStream_t s, float* probs, float* losses, const float* logits,
                                  const std::int32_t* targets, int N, int V);
void softmax_crossentropy_backward(cudaStream_t s, float* dlogits, const float* probs, const std::int32_t* targets, int N,
                                   int V);
// dst[i] = src[i] rounded to bf16 (nearest even): a matrix product's 16-bit operand.
void round_to_bf16(cudaStream_t s, void* dst, const float* src, std::int64_t n);

}  // namespace zero::gpt::cuda
