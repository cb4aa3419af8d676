// What the training loop needs of a language model beyond the engine's Module: this rank's
// micro-batch in, the next-token distribution out. The GPT (gpt.h) and the LLaMA (llama.h) are
// both; train/trainer.cpp builds one by the config's model.type and drives it through this.
#pragma once

#include <cstdint>

#include "zero/module.h"

namespace zero {

class LanguageModel : public Module {
 public:
  // This rank's micro-batch: inputs and next-token targets, (B, T) each, token ids < V.
  virtual void set_batch(const std::int32_t* inputs, const std::int32_t* targets) = 0;
  // After a forward: the next-token distribution at sequence b, position t, (V) f32 in host
  // memory, valid until the next call.
  virtual const float* probs(int b, int t) const = 0;
  virtual int micro_batch() const = 0;  // B
  virtual int seq_len() const = 0;      // T
};

}  // namespace zero
