// Generation with zero's GPT: one sequence, one token at a time, with each layer's keys and
// values cached, so a new token costs one row of every matrix product and attention over the
// cached positions, not a forward pass of the whole context. Runs on one process from the
// whole weights (a checkpoint read by checkpoint::ParameterReader, or Engine::full_parameters).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/gpt_shape.h"

namespace zero {

class Matmul;  // backends/cpu/matmul.h

class GptDecoder {
 public:
  // weights: every parameter whole, unpadded, in layout order (FlatLayout(shape.units(), 1)).
  GptDecoder(const GptShape& shape, std::vector<float> weights);
  ~GptDecoder();

  // Appends `token` at the next position; returns the next-token distribution, (V) f32. Past
  // the context length T the window slides: the cache is rebuilt from the last T/2 tokens.
  const float* feed(int token);
  int position() const { return pos_; }

 private:
  void step(int token);
  const float* param(int unit, int index) const { return weights_.data() + offsets_.at(unit).at(index); }

  GptShape shape_;
  std::vector<float> weights_;                   // (numel) f32, layout order
  std::vector<std::vector<std::size_t>> offsets_;  // (units, params) start of each parameter
  std::vector<float> k_, v_;                     // (L, T, C) f32: cached keys and values
  std::vector<float> x_, a_, qkv_, y_, h_, tmp_, logits_, probs_;
  std::unique_ptr<Matmul> matmul_;               // f32 products (one row each: bf16 would buy nothing)
  std::vector<int> tokens_;                      // the window's tokens
  int pos_ = 0;                                  // tokens in the cache
};

// Samples a token from `probs` (V) with temperature T (0: the most likely) and top-k (0: all),
// from a uniform draw u in [0, 1).
int sample_token(const float* probs, int vocab, double temperature, int top_k, double u);

}  // namespace zero
