// CPU kernels of the GPT, forward and backward. Matrix products (attention's too) go to the
// Matmul given (matmul.h: OpenBLAS f32 or oneDNN bf16); the rest is OpenMP over independent rows
// or channel chunks, vectorised (see vector_math.h). Every kernel is deterministic: each output
// element is computed by one thread in a fixed order (reductions over rows run per output
// channel), so results do not depend on the OpenMP thread count or the vector width, and ranks
// computing the same thing get the same bits. (A product's bits may depend on the library's
// thread count, which is fixed per rank.)
// Shapes: B batch, T time, C channels, OC output channels, NH heads, V vocabulary.
#pragma once

#include <cstdint>

#include "backends/cpu/matmul.h"

namespace zero::gpt {

// out (B,T,C) = wte[tokens] + wpe[t]
void encoder_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe, int B, int T, int C);
// dwte[tokens] += dout, dwpe[t] += dout
void encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, int B, int T, int C);

// out = (x - mean) * rstd * w + b over the last dimension; mean, rstd (N) saved for backward.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int N, int C);
// dinp += ..., dw += ..., db += ...
void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int N, int C);

// out (N,OC) = inp (N,C) @ w^T (w: (OC,C)) + bias (OC; may be null)
void matmul_forward(Matmul& mm, float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC);
// dinp (N,C) = dout @ w (overwritten); dw (OC,C) += dout^T @ inp; dbias (OC) += column sums of dout
void matmul_backward(Matmul& mm, float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w,
                     int N, int C, int OC);
// The same with w given in bf16 (a bf16 run's weights as the engine holds them), for a
// kOnednnBf16 mm: the bits of the calls above given w widened to f32.
void matmul_forward(Matmul& mm, float* out, const float* inp, const std::uint16_t* w, const float* bias, int N, int C, int OC);
void matmul_backward(Matmul& mm, float* dinp, float* dw, float* dbias, const float* dout, const float* inp,
                     const std::uint16_t* w, int N, int C, int OC);

// Causal self-attention. qkv (B,T,3C) holds q, k, v; att (B,NH,T,T), zero above the diagonal;
// out (B,T,C). preatt (the device tables' scratch for the scores) is neither read nor written.
void attention_forward(Matmul& mm, float* out, float* preatt, float* att, const float* qkv, int B, int T, int C, int NH);
// dqkv (B,T,3C) = ... (overwritten); datt (B,NH,T,T) scratch (its entries past each row's 64-key
// block are not written); dpreatt, as preatt above, untouched.
void attention_backward(Matmul& mm, float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH);

// GELU, tanh approximation (GPT-2)
void gelu_forward(float* out, const float* inp, std::int64_t n);
void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n);  // dinp = overwritten

void residual_forward(float* out, const float* a, const float* b, std::int64_t n);

// Fused passes: a linear layer's bias (its product taken with a null bias) and the element-wise
// step next to it in one pass over the rows, each element's operations those of the separate
// kernels in the same order (the same bits), one read and write of (N,OC) fewer. Outputs must
// not alias inputs (they are __restrict: unlike residual_forward, none works in place).
// out (N,OC) += bias row-wise, then act = gelu(out)   (matmul_forward's bias, then gelu_forward)
void bias_gelu_forward(float* out, float* act, const float* bias, int N, int OC);
// res_out (N,OC) = res_in + (out + bias)   (bias, then residual_forward; out itself stays the
// product: nothing reads the layer's output after the residual; bias may be null)
void bias_residual_forward(float* res_out, const float* res_in, const float* out, const float* bias, int N, int OC);
// dinp (N,OC) = gelu'(inp) dout (overwritten), dbias (OC) += column sums of dinp, rows in order
// (gelu_backward, then the bias gradient of the linear layer whose output went into the GELU)
void gelu_backward_bias(float* dinp, float* dbias, const float* inp, const float* dout, int N, int OC);

// probs (N,V) = softmax(logits); losses (N) = -log probs[target]; returns the mean loss.
float softmax_crossentropy_forward(float* probs, float* losses, const float* logits, const std::int32_t* targets, int N,
                                   int V);
// dlogits (N,V) = (probs - onehot(target)) / N   (overwritten)
void softmax_crossentropy_backward(float* dlogits, const float* probs, const std::int32_t* targets, int N, int V);

}  // namespace zero::gpt
