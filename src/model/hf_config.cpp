#include "model/hf_config.h"

#include <charconv>

namespace zero {
namespace {

// The fields both configs share.
void add_common(nlohmann::json& c, const HfConfigExtras& e) {
  if (e.bos) c["bos_token_id"] = *e.bos;
  if (e.eos) c["eos_token_id"] = *e.eos;
  c["torch_dtype"] = e.bf16 ? "bfloat16" : "float32";
  c["transformers_version"] = kHfTransformersVersion;
  c["use_cache"] = true;
}

// A float as the shortest decimal that reads back as it (1e-05, not 9.999999747378752e-06): what
// a person wrote in the model section, and the same float when transformers' fp32 model reads it.
nlohmann::json float_number(float x) {
  char text[32];
  const auto r = std::to_chars(text, text + sizeof text, x);
  return nlohmann::json::parse(std::string(text, r.ptr));
}

}  // namespace

nlohmann::json hf_config(const GptShape& s, const HfConfigExtras& extras) {
  nlohmann::json c = {
      {"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"}, {"vocab_size", s.vocab_size},
      {"n_positions", s.seq_len}, {"n_ctx", s.seq_len}, {"n_embd", s.channels}, {"n_layer", s.layers}, {"n_head", s.heads},
      {"n_inner", 4 * s.channels},
      // zero's GELU is the tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (backends/cpu/
      // vector_math.h), which transformers calls gelu_new; its LayerNorms add 1e-5 to the variance
      // (the gpt kernels, CPU and CUDA); it has no dropout; attention scores are scaled by
      // 1/sqrt(head size) and by nothing else.
      {"activation_function", "gelu_new"}, {"layer_norm_epsilon", float_number(1e-5f)},
      {"resid_pdrop", 0.0}, {"embd_pdrop", 0.0}, {"attn_pdrop", 0.0},
      {"scale_attn_weights", true}, {"scale_attn_by_inverse_layer_idx", false}, {"reorder_and_upcast_attn", false},
      {"tie_word_embeddings", true}};  // the LM head is wte (model/gpt_shape.h)
  add_common(c, extras);
  return c;
}

nlohmann::json hf_config(const LlamaShape& s, const HfConfigExtras& extras) {
  nlohmann::json c = {
      {"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"vocab_size", s.vocab_size},
      {"hidden_size", s.hidden}, {"intermediate_size", s.intermediate}, {"num_hidden_layers", s.layers},
      {"num_attention_heads", s.heads}, {"num_key_value_heads", s.kv_heads}, {"head_dim", s.head_dim()},
      {"max_position_embeddings", s.seq_len}, {"rms_norm_eps", float_number(s.rms_norm_eps)}, {"rope_theta", s.rope_theta},
      {"rope_scaling", nullptr}, {"hidden_act", "silu"}, {"attention_bias", false}, {"mlp_bias", false},
      {"attention_dropout", 0.0}, {"pretraining_tp", 1}, {"tie_word_embeddings", s.tie_word_embeddings}};
  add_common(c, extras);
  return c;
}

nlohmann::json hf_generation_config(const HfConfigExtras& extras) {
  nlohmann::json g = {{"_from_model_config", true}};
  if (extras.bos) g["bos_token_id"] = *extras.bos;
  if (extras.eos) g["eos_token_id"] = *extras.eos;
  g["transformers_version"] = kHfTransformersVersion;
  return g;
}

}  // namespace zero
