// Activation bytes of the LLaMA shapes the planner names, per rank, with and without activation
// checkpointing. The GPT-2 shapes are counted by the GPT model itself (Gpt::activation_bytes),
// which zero runs; these count what a LLaMA block keeps for backward, tensor by tensor, the way
// the GPT keeps its own (llm.c's style: every forward output a backward reads):
//
//   per block, BT = B*T tokens, kv = kv_heads * C / heads:
//     RMSNorm 1 out (BT,C) + rstd (BT); q (BT,C), k, v (BT,kv) after RoPE; attention out (BT,C)
//     + its log-sum-exp (B,H,T) (fused attention: FlashAttention/SDPA, which every LLaMA trainer
//     uses, keeps no T x T matrix); o projection (BT,C); residual (BT,C); RMSNorm 2 out (BT,C)
//     + rstd (BT); SwiGLU w1 out, w3 out, silu(w1)*w3 (BT,F) each; w2 out (BT,C); residual (BT,C)
//   once: embedding out (BT,C); final RMSNorm out (BT,C) + rstd (BT); logits and their softmax
//     (BT,V) each; losses (BT); backward scratch of one block: two (BT,C) residual gradients,
//     (BT,C+2kv) for q/k/v, three (BT,F) for the MLP, (BT,C) for the final norm
//
// With checkpointing each block keeps only its input (BT,C) and one block's tensors serve the
// recompute; with cpu checkpointing the kept inputs, L+1 of them (the head's too), are host bytes.
// Every tensor counts `element_bytes` per element: 4 in fp32, 2 in mixed precision (bf16 autocast
// keeps activations in 16 bits).
#pragma once

#include "model/gpt_activations.h"
#include "planner/model_shapes.h"

namespace zero {

ActivationBytes llama_activation_bytes(const LlamaShape& shape, int micro_batch, const GptCheckpointing& ckpt,
                                       int element_bytes);

}  // namespace zero
