#include "model/hf_config_reader.h"

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/input_file.h"

namespace zero {
namespace {

// The keys of one config.json, read with the config class's defaults; every error names the file.
class Keys {
 public:
  Keys(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {}

  ConfigError error(const std::string& key, const std::string& what) const {
    return ConfigError(cat("[hf] ", path_, ": ", key, " ", what));
  }
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  int integer(const char* key, int fallback) const {
    if (!has(key)) return fallback;
    const nlohmann::json& v = j_[key];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > (1 << 30)) {
      throw error(key, cat("is ", v.dump().substr(0, 60), ", not a positive integer"));
    }
    return static_cast<int>(v.get<std::int64_t>());
  }
  double number(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_number() || !std::isfinite(j_[key].get<double>())) throw error(key, cat("is ", j_[key].dump().substr(0, 60), ", not a number"));
    return j_[key].get<double>();
  }
  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean()) throw error(key, cat("is ", j_[key].dump().substr(0, 60), ", not true or false"));
    return j_[key].get<bool>();
  }
  std::string text(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_string()) throw error(key, cat("is ", j_[key].dump().substr(0, 60), ", not a string"));
    return j_[key].get<std::string>();
  }
  // A key whose value zero's model cannot run: an error saying what zero's model does instead.
  void refuse_unless(bool ok, const char* key, const std::string& why) const {
    if (!ok) throw error(key, cat("= ", j_[key].dump().substr(0, 80), " is not supported: ", why));
  }
  // Dropout is a training-time choice zero does not make: noted, not refused.
  void note_dropout(const char* key, double fallback, std::vector<std::string>& notes) const {
    const double p = number(key, fallback);
    if (p > 0) notes.push_back(cat(key, " ", p, " not applied: zero trains without dropout"));
  }

 private:
  const nlohmann::json& j_;
  std::string path_;
};

// transformers' GPT2Config defaults where a key is absent.
GptShape read_gpt2(const Keys& k, std::vector<std::string>& notes) {
  GptShape s;
  s.vocab_size = k.integer("vocab_size", 50257);
  s.seq_len = k.integer("n_positions", 1024);
  if (k.has("n_ctx") && k.integer("n_ctx", s.seq_len) != s.seq_len) {
    throw k.error("n_ctx", cat("= ", k.integer("n_ctx", 0), " differs from n_positions = ", s.seq_len, ": zero's context is the position table's length"));
  }
  s.channels = k.integer("n_embd", 768);
  s.layers = k.integer("n_layer", 12);
  s.heads = k.integer("n_head", 12);
  const std::string act = k.text("activation_function", "gelu_new");
  k.refuse_unless(act == "gelu_new" || act == "gelu_pytorch_tanh", "activation_function",
                  "zero's GPT computes GELU's tanh approximation (\"gelu_new\" or \"gelu_pytorch_tanh\")");
  k.refuse_unless(!k.has("n_inner") || k.integer("n_inner", 0) == 4 * s.channels, "n_inner",
                  cat("zero's GPT's MLP is 4 * n_embd = ", 4 * s.channels, " wide"));
  k.refuse_unless(static_cast<float>(k.number("layer_norm_epsilon", 1e-5)) == 1e-5f, "layer_norm_epsilon",
                  "zero's GPT normalises with epsilon 1e-5");
  k.refuse_unless(k.boolean("scale_attn_weights", true), "scale_attn_weights", "zero's attention scales by 1/sqrt(head size)");
  k.refuse_unless(!k.boolean("scale_attn_by_inverse_layer_idx", false), "scale_attn_by_inverse_layer_idx",
                  "zero's attention does not scale by the layer's index");
  k.refuse_unless(!k.boolean("add_cross_attention", false), "add_cross_attention", "zero's GPT is a decoder without cross-attention");
  k.refuse_unless(k.boolean("tie_word_embeddings", true), "tie_word_embeddings", "zero's GPT ties its LM head to wte");
  for (const char* key : {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) k.note_dropout(key, 0.1, notes);
  return s;
}

// transformers' LlamaConfig defaults where a key is absent.
LlamaShape read_llama(const Keys& k, std::vector<std::string>& notes) {
  LlamaShape s;
  s.vocab_size = k.integer("vocab_size", 32000);
  s.seq_len = k.integer("max_position_embeddings", 2048);
  s.hidden = k.integer("hidden_size", 4096);
  s.intermediate = k.integer("intermediate_size", 11008);
  s.layers = k.integer("num_hidden_layers", 32);
  s.heads = k.integer("num_attention_heads", 32);
  s.kv_heads = k.integer("num_key_value_heads", s.heads);
  s.rms_norm_eps = static_cast<float>(k.number("rms_norm_eps", 1e-6));
  s.rope_theta = k.number("rope_theta", 10000.0);
  s.tie_word_embeddings = k.boolean("tie_word_embeddings", false);
  k.refuse_unless(k.text("hidden_act", "silu") == "silu", "hidden_act", "zero's LLaMA's MLP is SwiGLU (\"silu\")");
  k.refuse_unless(!k.has("rope_scaling"), "rope_scaling", "zero's rotary embeddings are unscaled (rope_scaling null)");
  k.refuse_unless(!k.boolean("attention_bias", false), "attention_bias", "zero's LLaMA's projections have no biases");
  k.refuse_unless(!k.boolean("mlp_bias", false), "mlp_bias", "zero's LLaMA's MLP has no biases");
  k.refuse_unless(!k.has("head_dim") || k.integer("head_dim", 0) * s.heads == s.hidden, "head_dim",
                  "zero's head size is hidden_size / num_attention_heads");
  k.note_dropout("attention_dropout", 0.0, notes);
  return s;
}

}  // namespace

HfModelConfig read_hf_config(const std::string& dir) {
  HfModelConfig c;
  c.path = (std::filesystem::path(dir) / "config.json").string();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw ConfigError(cat("[hf] ", dir, " is not a directory: --init-from takes a Hugging Face model directory (config.json and "
                          "model.safetensors, or shards with model.safetensors.index.json)"));
  }
  const std::string text = read_input_file({c.path, "hf", "model config", std::uint64_t{16} << 20});
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) throw ConfigError(cat("[hf] ", c.path, " is not a JSON object: give a Hugging Face model's config.json"));
  const Keys k(j, c.path);
  c.model_type = k.text("model_type", "");
  try {
    if (c.model_type == "gpt2") {
      c.gpt = read_gpt2(k, c.notes);
      c.gpt.validate();
    } else if (c.model_type == "llama") {
      c.llama = read_llama(k, c.notes);
      c.llama.validate();
    } else {
      throw ConfigError(cat("[hf] ", c.path, ": model_type \"", c.model_type.substr(0, 60), "\" is not an architecture zero trains: "
                            "zero trains \"gpt2\" (GPT2LMHeadModel) and \"llama\" (LlamaForCausalLM)"));
    }
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    if (what.rfind("[model] ", 0) == 0) throw ConfigError(cat("[hf] ", c.path, ": ", what.substr(8)));
    throw;
  }
  return c;
}

}  // namespace zero
