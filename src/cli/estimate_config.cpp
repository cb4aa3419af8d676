#include "cli/estimate_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/input_file.h"
#include "config/config.h"

namespace zero::cli {
namespace {

using nlohmann::json;

constexpr std::uint64_t kMaxConfigBytes = 64 << 20;  // a DeepSpeed config is a few KB

bool is_auto(const json& v) { return v.is_string() && v.get<std::string>() == "auto"; }

// A value for a message: the value itself when it is a number, string, bool or null; for an array
// or object only its kind and size (dumping a deeply nested one would recurse without bound).
std::string brief(const json& v) {
  if (v.is_array()) return cat("an array of ", v.size(), " elements");
  if (v.is_object()) return cat("an object of ", v.size(), " keys");
  const std::string text = v.dump();
  return text.size() <= 80 ? text : text.substr(0, 77) + "...";
}

// An integer-valued number in [lo, hi] (DeepSpeed configs write sizes as 5e8) at `path`, if present.
std::optional<std::int64_t> integer(const json& obj, const std::string& key, const std::string& path, std::int64_t lo,
                                    std::int64_t hi) {
  if (!obj.contains(key) || is_auto(obj[key])) return std::nullopt;
  const json& v = obj[key];
  const auto refuse = [&] {
    return ConfigError(cat("[estimate] ", path, key, " must be an integer from ", lo, " to ", hi, ", not ", brief(v)));
  };
  if (!v.is_number()) throw refuse();
  const double d = v.get<double>();  // exact for every integer the range allows
  if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)) || d != std::floor(d)) throw refuse();
  return v.is_number_float() ? static_cast<std::int64_t>(d) : v.get<std::int64_t>();
}

int small_integer(const json& obj, const std::string& key, const std::string& path, int fallback) {
  return static_cast<int>(integer(obj, key, path, 1, 1 << 30).value_or(fallback));
}

// A number key of the model section, or the fallback when absent or "auto".
double number(const json& obj, const std::string& key, double fallback) {
  if (!obj.contains(key) || is_auto(obj[key])) return fallback;
  if (!obj[key].is_number()) throw ConfigError(cat("[estimate] model.", key, " must be a number, not ", brief(obj[key])));
  return obj[key].get<double>();
}

LlamaShape read_llama_model(const json& m) {
  LlamaShape l;
  auto get = [&](const char* key, int& out) { out = small_integer(m, key, "model.", out); };
  get("vocab_size", l.vocab_size);
  get("max_position_embeddings", l.seq_len);
  get("hidden_size", l.hidden);
  get("intermediate_size", l.intermediate);
  get("num_attention_heads", l.heads);
  l.kv_heads = l.heads;  // Hugging Face's default
  get("num_key_value_heads", l.kv_heads);
  get("num_hidden_layers", l.layers);
  l.rms_norm_eps = static_cast<float>(number(m, "rms_norm_eps", l.rms_norm_eps));
  l.rope_theta = number(m, "rope_theta", l.rope_theta);
  if (m.contains("tie_word_embeddings") && !is_auto(m["tie_word_embeddings"])) {
    if (!m["tie_word_embeddings"].is_boolean()) throw ConfigError(cat("[estimate] model.tie_word_embeddings must be true or false, not ", brief(m["tie_word_embeddings"])));
    l.tie_word_embeddings = m["tie_word_embeddings"].get<bool>();
  }
  l.validate();
  return l;
}

GptShape read_model(const json& m) {
  if (!m.is_object()) throw ConfigError(cat("[estimate] model must be an object, not ", brief(m)));
  if (m.contains("type") && m["type"] != "gpt") {
    throw ConfigError(cat("[estimate] model.type is ", brief(m["type"]), "; zero trains \"gpt\" and \"llama\""));
  }
  GptShape g;
  auto get = [&](const char* key, int& out) { out = small_integer(m, key, "model.", out); };
  get("vocab_size", g.vocab_size);
  get("seq_len", g.seq_len);
  get("n_ctx", g.seq_len);
  get("n_embd", g.channels);
  get("n_layer", g.layers);
  get("n_head", g.heads);
  g.validate();
  return g;
}

}  // namespace

EstimateConfig read_estimate_config(const std::string& path) {
  const std::string text =
      read_input_file({.path = path, .component = "estimate", .role = "config file", .max_bytes = kMaxConfigBytes});
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ConfigError(cat("[estimate] ", path, " is not valid JSON: ", e.what()));
  }
  if (!root.is_object()) throw ConfigError(cat("[estimate] ", path, " must hold a JSON object"));
  EstimateConfig c;
  c.path = path;
  c.has_zero = root.contains("zero_optimization");
  if (root.contains("train_micro_batch_size_per_gpu")) c.micro_batch = small_integer(root, "train_micro_batch_size_per_gpu", "", 1);
  if (root.contains("gradient_accumulation_steps")) c.gradient_accumulation_steps = small_integer(root, "gradient_accumulation_steps", "", 1);
  if (root.contains("model")) {
    const json& m = root["model"];
    if (m.is_object() && m.contains("type") && m["type"] == "llama") {
      c.llama = read_llama_model(m);
    } else {
      c.gpt = read_model(m);
    }
  }
  c.document = std::move(root);
  return c;
}

EngineSettings engine_settings(const EstimateConfig& config, int ranks, std::int64_t hidden) {
  if (config.document.is_null()) return {};
  return parse_engine_settings(config.document, ranks, hidden, {.strict = false, .source = config.path});
}

}  // namespace zero::cli
