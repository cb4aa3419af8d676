// The LLaMA's KV-cached decoder (decoder.h): pre-RMSNorm attention with rotary embeddings at the
// position's angles and grouped-query attention (each key/value head cached once per query head
// that reads it, as the training forward's repeat_kv does), then the SwiGLU MLP; the head tied to
// the embedding or not.
#pragma once

#include <vector>

#include "model/decoder.h"
#include "model/llama_shape.h"

namespace zero {

class LlamaDecoder final : public Decoder {
 public:
  // weights: every parameter whole, unpadded, in layout order (FlatLayout(shape.units(), 1)).
  LlamaDecoder(const LlamaShape& shape, std::vector<float> weights);

 private:
  void step(int token) override;

  LlamaShape shape_;
  std::vector<float> cos_, sin_;                // (T, hd/2) the rotary table
  std::vector<float> x_, a_, q_, k_, v_, qkv_;  // one position: (C), (C), (C), (KV), (KV), (3C)
  std::vector<float> y_, tmp_, gate_, up_, act_;  // (C), (C), (F), (F), (F)
};

}  // namespace zero
