#include "model/gpt_shape.h"

#include <cmath>

#include "zero/error.h"

namespace zero {

void GptShape::validate() const {
  auto positive = [](const char* name, int v) {
    if (v <= 0) throw ConfigError(cat("[model] ", name, " must be positive, not ", v));
  };
  positive("vocab_size", vocab_size);
  positive("seq_len", seq_len);
  positive("n_embd", channels);
  positive("n_layer", layers);
  positive("n_head", heads);
  if (channels % heads != 0) {
    throw ConfigError(cat("[model] n_embd (", channels, ") must divide by n_head (", heads, ")"));
  }
  if (vocab_size > 65536) throw ConfigError(cat("[model] vocab_size ", vocab_size, " exceeds 65536 (tokens are uint16)"));
}

std::int64_t GptShape::num_parameters() const {
  const std::int64_t V = vocab_size, T = seq_len, C = channels, L = layers;
  return V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C;
}

std::vector<UnitSpec> GptShape::units() const {
  validate();
  const std::int64_t V = vocab_size, T = seq_len, C = channels;
  const float std_w = 0.02f;
  const float std_proj = 0.02f / std::sqrt(2.0f * layers);  // GPT-2: residual projections scaled by 1/sqrt(2L)
  std::vector<UnitSpec> units;
  units.push_back({"embedding", {{"wte", {V, C}, Init::normal(std_w), true}, {"wpe", {T, C}, Init::normal(std_w), true}}, {}});
  for (int l = 0; l < layers; ++l) {
    const std::string p = cat("h.", l, ".");
    units.push_back({cat("h.", l),
                     {{p + "ln1.w", {C}, Init::ones(), false},
                      {p + "ln1.b", {C}, Init::zeros(), false},
                      {p + "attn.w_qkv", {3 * C, C}, Init::normal(std_w), true},
                      {p + "attn.b_qkv", {3 * C}, Init::zeros(), false},
                      {p + "attn.w_proj", {C, C}, Init::normal(std_proj), true},
                      {p + "attn.b_proj", {C}, Init::zeros(), false},
                      {p + "ln2.w", {C}, Init::ones(), false},
                      {p + "ln2.b", {C}, Init::zeros(), false},
                      {p + "mlp.w_fc", {4 * C, C}, Init::normal(std_w), true},
                      {p + "mlp.b_fc", {4 * C}, Init::zeros(), false},
                      {p + "mlp.w_proj", {C, 4 * C}, Init::normal(std_proj), true},
                      {p + "mlp.b_proj", {C}, Init::zeros(), false}},
                     {}});
  }
  units.push_back({"head", {{"lnf.w", {C}, Init::ones(), false}, {"lnf.b", {C}, Init::zeros(), false}}, {0}});
  return units;
}

std::string GptShape::describe() const {
  return cat("V=", vocab_size, " T=", seq_len, " C=", channels, " L=", layers, " H=", heads);
}

}  // namespace zero
