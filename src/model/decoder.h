// Generation, one sequence, one token at a time, with each layer's keys and values cached: a new
// token costs one row of every matrix product and attention over the cached positions, not a
// forward pass of the whole context. Runs on one process from the whole weights (a checkpoint
// read by checkpoint::ParameterReader, a Hugging Face directory, or Engine::full_parameters).
// The GPT (gpt_decoder.h) and the LLaMA (llama_decoder.h) are decoders; this base owns what they
// share: the weights by unit and parameter, the cache, the window, attention over the cache and
// the distribution.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "partition/spec.h"

namespace zero {

class Matmul;  // backends/cpu/matmul.h

class Decoder {
 public:
  virtual ~Decoder();

  // Appends `token` at the next position; returns the next-token distribution, (V) f32. Past
  // the context length T the window slides: the cache is rebuilt from the last T/2 tokens.
  const float* feed(int token);
  int position() const { return pos_; }
  int vocab_size() const { return vocab_; }

 protected:
  struct Dims {
    int vocab, seq_len, layers, channels, heads;  // V, T, L, C (of the cached keys and values), NH
  };
  // weights: every parameter of `units` whole, unpadded, in layout order (FlatLayout(units, 1));
  // ConfigError naming `model` when their count is not the units'.
  Decoder(const std::vector<UnitSpec>& units, std::vector<float> weights, Dims dims, const std::string& model);

  // The logits (logits_) of the token after `token` at position position(), whose keys and values
  // the step stores in key(l) and value(l) of every layer l first.
  virtual void step(int token) = 0;

  const float* param(int unit, int index) const { return weights_.data() + offsets_.at(unit).at(index); }
  float* key(int layer) { return k_.data() + (static_cast<std::size_t>(layer) * d_.seq_len + pos_) * d_.channels; }
  float* value(int layer) { return v_.data() + (static_cast<std::size_t>(layer) * d_.seq_len + pos_) * d_.channels; }
  // y (C) = per head h, softmax(q_h k_h^T / sqrt(C/NH)) v_h over positions 0..position() of layer l.
  void attend(int layer, const float* q, float* y);
  Matmul& matmul() { return *matmul_; }

  std::vector<float> logits_;  // (V)

 private:
  Dims d_;
  int vocab_;
  std::vector<float> weights_;                     // (numel) f32, layout order
  std::vector<std::vector<std::size_t>> offsets_;  // (units, params) start of each parameter
  std::vector<float> k_, v_;                       // (L, T, C) f32: cached keys and values
  std::vector<float> att_, probs_;                 // (T), (V)
  std::unique_ptr<Matmul> matmul_;                 // f32 products (one row each: bf16 would buy nothing)
  std::vector<int> tokens_;                        // the window's tokens
  int pos_ = 0;                                    // tokens in the cache
};

// Samples a token from `probs` (V) with temperature T (0: the most likely) and top-k (0: all),
// from a uniform draw u in [0, 1).
int sample_token(const float* probs, int vocab, double temperature, int top_k, double u);

}  // namespace zero
