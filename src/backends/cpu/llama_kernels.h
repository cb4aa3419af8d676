// CPU kernels of the LLaMA decoder that the GPT's (gpt_kernels.h) do not cover, forward and
// backward: the token embedding without positions, RMSNorm, rotary position embeddings with
// grouped-query attention's key/value sharing, and the SwiGLU gate. Plain loops, OpenMP over
// independent rows or channel chunks; each output element is computed by one thread in a fixed
// order, so the bits do not depend on the thread count (as gpt_kernels.h's).
// Shapes: B batch, T time, C channels (hidden_size), NH query heads, NKV key/value heads, hd = C/NH
// head size, KV = NKV*hd, F intermediate_size, N rows (B*T).
#pragma once

#include <cstdint>

namespace zero::llama {

// out (B*T, C) = wte[tokens]
void embedding_forward(float* out, const std::int32_t* tokens, const float* wte, int N, int C);
// dwte[tokens] += dout
void embedding_backward(float* dwte, const float* dout, const std::int32_t* tokens, int N, int C);

// out = x * rstd * w with rstd = 1 / sqrt(mean(x^2) + eps) over the last dimension; rstd (N) saved.
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, float eps, int N, int C);
// dinp += ..., dw += ...
void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, const float* rstd, int N,
                      int C);

// cos, sin (T, hd/2): t * theta^(-2i/hd)'s (the model's rotary table, llama.cpp), dimension i and
// i + hd/2 of a head forming a pair (Hugging Face's rotate_half convention).
// q (N, C), k (N, KV), v (N, KV) -> qkv (N, 3C) as attention_forward reads it: q and k rotated
// (x*cos + rotate_half(x)*sin), k and v repeated so that query head h reads key/value head
// h / (NH/NKV) (Hugging Face's repeat_kv). Row n is position n % T.
void rope_pack_forward(float* qkv, const float* q, const float* k, const float* v, const float* cos, const float* sin,
                       int N, int T, int NH, int NKV, int hd);
// The transpose: dq (N, C), dk, dv (N, KV) (overwritten) from dqkv (N, 3C); a key/value head's
// gradient is the sum over the query heads that read it, in head order.
void rope_pack_backward(float* dq, float* dk, float* dv, const float* dqkv, const float* cos, const float* sin, int N,
                        int T, int NH, int NKV, int hd);

// out (n) = silu(gate) * up, silu(g) = g / (1 + exp(-g))
void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t n);
// dgate, dup (n) overwritten
void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up, std::int64_t n);

}  // namespace zero::llama
