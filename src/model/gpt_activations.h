// The GPT's activation buffers: which tensors one micro-batch keeps, how many layers of each, and
// in which tier, with and without activation checkpointing. The model allocates them once, at
// construction, so what it holds is a constant the planner can count (Gpt::activation_bytes).
//
// Without checkpointing every block keeps its whole forward for backward: (L, ...) tensors, layer
// outermost, as in llm.c. With checkpointing a block keeps only its input (the residual stream
// entering it, (B,T,C)); one block's worth of internals is shared by every block, filled again by
// the block's recompute just before its backward. With cpu checkpointing the kept inputs live in
// the host tier, (L+1, B,T,C): block l's input is entry l, the head's is entry L; the device holds
// the current block's input and output, (B,T,C) each, copied from and to the host.
#pragma once

#include <cstdint>
#include <vector>

#include "zero/ledger.h"
#include "model/gpt_shape.h"

namespace zero {

// DeepSpeed's activation_checkpointing, as the GPT implements it: every block is a checkpoint.
struct GptCheckpointing {
  bool enabled = false;  // keep each block's input only, recompute its forward in backward
  bool cpu = false;      // cpu_checkpointing: the kept inputs in the host tier (needs enabled)
};

// Activation bytes by tier.
struct ActivationBytes {
  std::uint64_t device = 0;
  std::uint64_t host = 0;
  std::uint64_t total() const { return device + host; }
  bool operator==(const ActivationBytes&) const = default;
};

namespace gpt {

// The activation tensors. Per-layer ones are (D, ...) with D = L, or 1 under checkpointing.
enum Act : int {
  kEncoded,                                                 // (B,T,C); cpu: the current block's input
  kLn1, kLn1Mean, kLn1Rstd, kQkv, kAtty, kPreatt, kAtt,     // (D,B,T,C) (D,B,T) (D,B,T) (D,B,T,3C) (D,B,T,C);
                                                            // (B,NH,T,T) forward scratch, (D,B,NH,T,T)
  kAttproj, kResidual2, kLn2, kLn2Mean, kLn2Rstd,           // (D,B,T,C) x3, (D,B,T) x2
  kFch, kFchGelu, kFcproj,                                  // (D,B,T,4C) x2, (D,B,T,C)
  kResidual3,                                               // (L,B,T,C): block outputs = inputs kept; cpu: (B,T,C)
  kLnf, kLnfMean, kLnfRstd, kLogits, kProbs, kLosses,       // (B,T,C) (B,T) (B,T) (B,T,V) (B,T,V) (B,T)
  kDResidual, kDTmp, kDFchGelu, kDFch, kDQkv, kDPreatt, kDAtt, kDLnf,  // backward scratch, one layer's worth
  kKept,                                                    // cpu checkpointing only: (L+1,B,T,C), host tier
  kNumActs
};

struct ActivationEntry {
  std::int64_t numel = 0;  // f32 elements; 0: not used in this mode
  Tier tier = Tier::kDevice;
};

// One entry per Act, in Act order. ConfigError for cpu checkpointing without checkpointing.
// attention_scores: the device's attention kernels use the scores' scratch (preatt, dpreatt; its
// BackendFacts::attention_scores); without it those entries are 0.
std::vector<ActivationEntry> activation_plan(const GptShape& shape, int micro_batch, const GptCheckpointing& ckpt,
                                             bool attention_scores = true);

// Sum of the plan's bytes by tier.
ActivationBytes activation_plan_bytes(const GptShape& shape, int micro_batch, const GptCheckpointing& ckpt,
                                      bool attention_scores = true);

}  // namespace gpt
}  // namespace zero
