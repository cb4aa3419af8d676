// The LLaMA's activation buffers, as the GPT's (gpt_activations.h): which tensors one
// micro-batch keeps, how many layers of each, allocated once through the ledger so the planner
// counts them (Llama::activation_bytes). Without checkpointing every block keeps its forward for
// backward, (L, ...) tensors; with checkpointing a block keeps only its input and one block's
// internals serve every block, refilled by the recompute before its backward. cpu checkpointing
// (kept inputs in the host tier) is the GPT's alone for now: a ConfigError here.
#pragma once

#include <cstdint>
#include <vector>

#include "model/gpt_activations.h"
#include "model/llama_shape.h"

namespace zero::llama {

using gpt::ActivationEntry;

// Per-layer tensors are (D, ...), D = L, or 1 under checkpointing. KV = kv_channels(), F intermediate.
enum Act : int {
  kEmbedded,                                  // (B,T,C): block 0's input
  kRms1, kRstd1, kQkv, kAtty, kAtt,           // (D,B,T,C) (D,B,T) (D,B,T,3C): rotated, kv repeated; (D,B,T,C) (D,B,NH,T,T)
  kResidual2, kRms2, kRstd2,                  // (D,B,T,C) x2, (D,B,T)
  kGate, kUp, kSwiglu,                        // (D,B,T,F) x3
  kResidual3,                                 // (L,B,T,C): block outputs = the next blocks' kept inputs
  kQ, kK, kV, kPreatt, kTmp,                  // forward scratch: (B,T,C) (B,T,KV) x2 (B,NH,T,T) (B,T,C)
  kCos, kSin,                                 // (T, hd/2) each: the rotary table
  kRmsf, kRstdf, kLogits, kProbs, kLosses,    // (B,T,C) (B,T) (B,T,V) x2 (B,T)
  kDResidual, kDTmp, kDTmp2, kDSwiglu, kDGate, kDUp,  // backward scratch: (B,T,C) x3, (B,T,F) x3
  kDQkv, kDQ, kDK, kDV, kDPreatt, kDAtt, kDRmsf,      // (B,T,3C) (B,T,C) (B,T,KV) x2 (B,NH,T,T) x2 (B,T,C)
  kNumActs
};

// One entry per Act, in Act order. ConfigError for cpu checkpointing. attention_scores as in
// gpt_activations.h.
std::vector<ActivationEntry> activation_plan(const LlamaShape& shape, int micro_batch, const GptCheckpointing& ckpt,
                                             bool attention_scores = true);
ActivationBytes activation_plan_bytes(const LlamaShape& shape, int micro_batch, const GptCheckpointing& ckpt,
                                      bool attention_scores = true);

}  // namespace zero::llama
