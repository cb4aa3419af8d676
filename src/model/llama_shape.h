// The shape of a LLaMA decoder and the units it is sharded in, with Hugging Face's field and
// parameter names (LlamaConfig, LlamaForCausalLM), so that a later import or export maps 1:1.
// Shared by the model, the planner and the config.
//
// Units, in forward order (C hidden, F intermediate, KV = num_key_value_heads * C / heads):
//   0        "model.embed_tokens"  model.embed_tokens.weight (V, C)
//   1 .. L   "model.layers.<l>"    model.layers.<l>.input_layernorm.weight (C);
//                                  .self_attn.q_proj.weight (C, C), .k_proj.weight (KV, C),
//                                  .v_proj.weight (KV, C), .o_proj.weight (C, C);
//                                  .post_attention_layernorm.weight (C);
//                                  .mlp.gate_proj.weight (F, C), .up_proj.weight (F, C), .down_proj.weight (C, F)
//   L + 1    "head"                model.norm.weight (C); lm_head.weight (V, C) unless tied: then it
//                                  borrows unit 0 and the head is the embedding
// No biases. Weight decay applies to the matrices and the embedding, not to the norms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zero/spec.h"

namespace zero {

struct LlamaShape {
  int vocab_size = 256;           // V
  int seq_len = 64;               // T: max_position_embeddings, the context the model trains at
  int hidden = 128;               // C: hidden_size
  int intermediate = 344;         // F: intermediate_size
  int layers = 4;                 // L: num_hidden_layers
  int heads = 4;                  // NH: num_attention_heads; C must divide by it, into an even head size
  int kv_heads = 4;               // NKV: num_key_value_heads; divides NH (grouped-query attention)
  float rms_norm_eps = 1e-5f;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;

  int head_dim() const { return hidden / heads; }
  int kv_channels() const { return kv_heads * head_dim(); }
  // Throws ConfigError naming the bad field by its Hugging Face name.
  void validate() const;
  std::int64_t num_parameters() const;
  std::vector<UnitSpec> units() const;  // as listed above
  std::string describe() const;         // "V=256 T=64 C=128 L=4 H=4 KV=4 F=344" (+ " tied")
  // The rotary table, cos and sin (T, hd/2) of t * theta^(-2i/hd), in double then rounded: the
  // angles Hugging Face's LlamaRotaryEmbedding gives position t and the pair (i, i + hd/2).
  void rope_table(float* cos, float* sin) const;
};

}  // namespace zero
