#include "model/llama_shape.h"

#include <cmath>

#include "zero/error.h"

namespace zero {

void LlamaShape::validate() const {
  auto positive = [](const char* name, int v) {
    if (v <= 0) throw ConfigError(cat("[model] ", name, " must be positive, not ", v));
  };
  positive("vocab_size", vocab_size);
  positive("max_position_embeddings", seq_len);
  positive("hidden_size", hidden);
  positive("intermediate_size", intermediate);
  positive("num_hidden_layers", layers);
  positive("num_attention_heads", heads);
  positive("num_key_value_heads", kv_heads);
  if (hidden % heads != 0 || (hidden / heads) % 2 != 0) {
    throw ConfigError(cat("[model] hidden_size (", hidden, ") must divide by num_attention_heads (", heads,
                          ") into an even head size (rotary embeddings rotate pairs of dimensions)"));
  }
  if (hidden / heads > 1024) throw ConfigError(cat("[model] the head size hidden_size / num_attention_heads = ", hidden / heads, " exceeds 1024"));
  if (heads % kv_heads != 0) {
    throw ConfigError(cat("[model] num_key_value_heads (", kv_heads, ") must divide num_attention_heads (", heads, ")"));
  }
  if (!(rms_norm_eps > 0.0f) || !std::isfinite(rms_norm_eps)) throw ConfigError(cat("[model] rms_norm_eps must be a positive number, not ", rms_norm_eps));
  if (!(rope_theta > 1.0) || !std::isfinite(rope_theta)) throw ConfigError(cat("[model] rope_theta must be a number above 1, not ", rope_theta));
}

std::int64_t LlamaShape::num_parameters() const {
  const std::int64_t V = vocab_size, C = hidden, F = intermediate, L = layers, KV = kv_channels();
  return V * C + L * (2 * C + 2 * C * C + 2 * KV * C + 3 * F * C) + C + (tie_word_embeddings ? 0 : V * C);
}

std::vector<UnitSpec> LlamaShape::units() const {
  validate();
  const std::int64_t V = vocab_size, C = hidden, F = intermediate, KV = kv_channels();
  const Init w = Init::normal(0.02f);  // Hugging Face's initializer_range
  std::vector<UnitSpec> units;
  units.push_back({"model.embed_tokens", {{"model.embed_tokens.weight", {V, C}, w, true}}, {}});
  for (int l = 0; l < layers; ++l) {
    const std::string p = cat("model.layers.", l, ".");
    units.push_back({cat("model.layers.", l),
                     {{p + "input_layernorm.weight", {C}, Init::ones(), false},
                      {p + "self_attn.q_proj.weight", {C, C}, w, true},
                      {p + "self_attn.k_proj.weight", {KV, C}, w, true},
                      {p + "self_attn.v_proj.weight", {KV, C}, w, true},
                      {p + "self_attn.o_proj.weight", {C, C}, w, true},
                      {p + "post_attention_layernorm.weight", {C}, Init::ones(), false},
                      {p + "mlp.gate_proj.weight", {F, C}, w, true},
                      {p + "mlp.up_proj.weight", {F, C}, w, true},
                      {p + "mlp.down_proj.weight", {C, F}, w, true}},
                     {}});
  }
  UnitSpec head{"head", {{"model.norm.weight", {C}, Init::ones(), false}}, {}};
  if (tie_word_embeddings) {
    head.borrows = {0};
  } else {
    head.params.push_back({"lm_head.weight", {V, C}, w, true});
  }
  units.push_back(head);
  return units;
}

std::string LlamaShape::describe() const {
  return cat("V=", vocab_size, " T=", seq_len, " C=", hidden, " L=", layers, " H=", heads, " KV=", kv_heads, " F=", intermediate,
             tie_word_embeddings ? " tied" : "");
}

void LlamaShape::rope_table(float* cos, float* sin) const {
  const int hd = head_dim(), half = hd / 2;
  for (int i = 0; i < half; ++i) {
    const double inv_freq = 1.0 / std::pow(rope_theta, 2.0 * i / hd);
    for (int t = 0; t < seq_len; ++t) {
      cos[t * half + i] = static_cast<float>(std::cos(t * inv_freq));
      sin[t * half + i] = static_cast<float>(std::sin(t * inv_freq));
    }
  }
}

}  // namespace zero
