// The GPT's KV-cached decoder (decoder.h): GPT-2's block, one position at a time.
#pragma once

#include <vector>

#include "model/decoder.h"
#include "model/gpt_shape.h"

namespace zero {

class GptDecoder final : public Decoder {
 public:
  // weights: every parameter whole, unpadded, in layout order (FlatLayout(shape.units(), 1)).
  GptDecoder(const GptShape& shape, std::vector<float> weights);

 private:
  void step(int token) override;

  GptShape shape_;
  std::vector<float> x_, a_, qkv_, y_, h_, tmp_;  // one position's vectors
};

}  // namespace zero
