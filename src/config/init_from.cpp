#include "config/init_from.h"

#include <vector>

#include "common/error.h"

namespace zero {
namespace {

constexpr int kMaxVocabulary = 65536;  // the model section's bound (config.cpp)

// config.json's name for a key of zero's model section (GPT-2's n_positions is zero's context).
std::string hf_key(const std::string& key, bool llama) {
  if (!llama && (key == "n_ctx" || key == "seq_len")) return "n_positions";
  if (key == "type") return "model_type";
  return key;
}

// Whether a value the user gave means the directory's (numbers compared as the model stores them).
bool agrees(const nlohmann::json& given, const nlohmann::json& hf) {
  if (given.is_number() && hf.is_number()) return static_cast<float>(given.get<double>()) == static_cast<float>(hf.get<double>());
  return given == hf;
}

}  // namespace

nlohmann::json hf_model_section(const HfModelConfig& hf) {
  if (hf.is_llama()) {
    const LlamaShape& s = hf.llama;
    return {{"type", "llama"}, {"vocab_size", s.vocab_size}, {"max_position_embeddings", s.seq_len}, {"hidden_size", s.hidden},
            {"intermediate_size", s.intermediate}, {"num_hidden_layers", s.layers}, {"num_attention_heads", s.heads},
            {"num_key_value_heads", s.kv_heads}, {"rms_norm_eps", s.rms_norm_eps}, {"rope_theta", s.rope_theta},
            {"tie_word_embeddings", s.tie_word_embeddings}};
  }
  const GptShape& s = hf.gpt;
  return {{"type", "gpt"}, {"vocab_size", s.vocab_size}, {"n_ctx", s.seq_len}, {"n_embd", s.channels}, {"n_layer", s.layers}, {"n_head", s.heads}};
}

HfModelConfig apply_init_from(nlohmann::json& j, const std::string& dir, const std::function<std::string(const std::string&)>& source_of) {
  const HfModelConfig hf = read_hf_config(dir);
  nlohmann::json model = hf_model_section(hf);
  if (model["vocab_size"].get<int>() > kMaxVocabulary) {  // said here, naming the file the value came from
    throw ConfigError(cat("[hf] ", hf.path, ": vocab_size ", model["vocab_size"].get<int>(), " is beyond the ", kMaxVocabulary,
                          " tokens zero's model section allows (its token ids are 16-bit): zero cannot train this model yet"));
  }
  const nlohmann::json given = j.is_object() && j.contains("model") && j["model"].is_object() ? j["model"] : nlohmann::json::object();
  std::vector<std::string> keys = {"type"};  // the type first: another family's keys would only confuse
  for (const auto& [key, value] : given.items()) {
    if (key != "type") keys.push_back(key);
  }
  for (const std::string& key : keys) {
    if (key == "checkpoint_activations" || key == "init_from" || !given.contains(key)) continue;
    const nlohmann::json& value = given[key];
    const std::string source = source_of(key);
    if (source.empty()) continue;
    const std::string theirs = hf_key(key, hf.is_llama());
    const nlohmann::json hf_value = key == "type" ? nlohmann::json(hf.model_type)
                                    : model.contains(key) ? model[key]
                                    : key == "seq_len" ? model["n_ctx"] : nlohmann::json();
    const bool same_type = key == "type" && ((value == "gpt" && !hf.is_llama()) || (value == "llama" && hf.is_llama()));
    if (hf_value.is_null()) {
      throw ConfigError(cat("[config] model.", key, " (", source, ") is not a key of the ", hf.is_llama() ? "LLaMA" : "GPT",
                            " model section that --init-from ", dir, " gives: remove it (the model is ", hf.path, "'s)"));
    }
    if (!same_type && !agrees(value, hf_value)) {
      throw ConfigError(cat("[config] model.", key, " = ", value.dump(), " (", source, ") but ", hf.path, " has ", theirs, " = ",
                            hf_value.dump(), ": the model is --init-from's; remove model.", key, " or make it agree"));
    }
  }
  if (given.contains("checkpoint_activations")) model["checkpoint_activations"] = given["checkpoint_activations"];
  model["init_from"] = dir;
  j["model"] = model;
  return hf;
}

}  // namespace zero
