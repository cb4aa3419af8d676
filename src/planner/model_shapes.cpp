#include "planner/model_shapes.h"

#include <algorithm>
#include <functional>
#include <map>

#include "common/error.h"

namespace zero {

void LlamaShape::validate() const {
  auto positive = [](const char* name, int v) {
    if (v <= 0) throw ConfigError(cat("[planner] ", name, " must be positive, not ", v));
  };
  positive("vocab_size", vocab_size);
  positive("seq_len", seq_len);
  positive("n_embd", channels);
  positive("n_layer", layers);
  positive("n_head", heads);
  positive("n_kv_head", kv_heads);
  positive("ffn_hidden", ffn_hidden);
  if (channels % heads != 0) throw ConfigError(cat("[planner] n_embd (", channels, ") must divide by n_head (", heads, ")"));
  if (heads % kv_heads != 0) throw ConfigError(cat("[planner] n_head (", heads, ") must divide by n_kv_head (", kv_heads, ")"));
}

std::int64_t LlamaShape::num_parameters() const {
  const std::int64_t V = vocab_size, C = channels, L = layers, F = ffn_hidden;
  const std::int64_t kv = static_cast<std::int64_t>(kv_heads) * (C / heads);
  return 2 * V * C + L * (2 * C * C + 2 * C * kv + 3 * C * F + 2 * C) + C;
}

std::vector<UnitSpec> LlamaShape::units() const {
  validate();
  const std::int64_t V = vocab_size, C = channels, F = ffn_hidden;
  const std::int64_t kv = static_cast<std::int64_t>(kv_heads) * (C / heads);
  // Only sizes matter to the planner; initialisation is left at its default.
  std::vector<UnitSpec> units;
  units.push_back({"embedding", {{"tok_embeddings", {V, C}, {}, true}}, {}});
  for (int l = 0; l < layers; ++l) {
    const std::string p = cat("h.", l, ".");
    units.push_back({cat("h.", l),
                     {{p + "attention_norm", {C}, {}, false},
                      {p + "wq", {C, C}, {}, true},
                      {p + "wk", {kv, C}, {}, true},
                      {p + "wv", {kv, C}, {}, true},
                      {p + "wo", {C, C}, {}, true},
                      {p + "ffn_norm", {C}, {}, false},
                      {p + "w1", {F, C}, {}, true},
                      {p + "w2", {C, F}, {}, true},
                      {p + "w3", {F, C}, {}, true}},
                     {}});
  }
  units.push_back({"head", {{"norm", {C}, {}, false}, {"output", {V, C}, {}, true}}, {}});
  return units;
}

std::string LlamaShape::describe() const {
  return cat("V=", vocab_size, " T=", seq_len, " C=", channels, " L=", layers, " H=", heads, " KV=", kv_heads,
             " F=", ffn_hidden);
}

std::int64_t ModelDescription::num_parameters() const {
  std::int64_t n = 0;
  for (const UnitSpec& u : units)
    for (const ParamSpec& p : u.params) n += p.numel();
  return n;
}

std::int64_t ModelDescription::largest_unit() const {
  std::int64_t largest = 0;
  for (const UnitSpec& u : units) {
    std::int64_t n = 0;
    for (const ParamSpec& p : u.params) n += p.numel();
    largest = std::max(largest, n);
  }
  return largest;
}

ModelDescription describe_gpt(const GptShape& shape, const std::string& name) {
  ModelDescription m;
  m.name = name;
  m.family = "gpt2";
  m.detail = shape.describe();
  m.units = shape.units();  // validates
  m.gpt = shape;
  return m;
}

ModelDescription describe_llama(const LlamaShape& shape, const std::string& name) {
  ModelDescription m;
  m.name = name;
  m.family = "llama";
  m.detail = shape.describe();
  m.units = shape.units();  // validates
  m.llama = shape;
  return m;
}

ModelDescription describe_counts(std::int64_t parameters, std::int64_t largest_unit) {
  if (parameters <= 0) throw ConfigError(cat("[planner] the parameter count must be positive, not ", parameters));
  if (largest_unit <= 0) throw ConfigError(cat("[planner] the largest unit must be positive, not ", largest_unit));
  if (largest_unit > parameters) {
    throw ConfigError(cat("[planner] the largest unit (", largest_unit, ") cannot exceed the parameter count (",
                          parameters, ")"));
  }
  ModelDescription m;
  m.name = "custom";
  m.family = "counts";
  m.detail = cat("params=", parameters, " largest_unit=", largest_unit);
  const std::int64_t units = (parameters + largest_unit - 1) / largest_unit;
  m.units.push_back({"unit.0", {{"unit.0.w", {largest_unit}, {}, true}}, {}});
  // The rest split as evenly as whole elements allow: each is at most `largest_unit` because
  // units - 1 >= (parameters - largest_unit) / largest_unit.
  const std::int64_t rest = parameters - largest_unit, others = units - 1;
  for (std::int64_t u = 1; u <= others; ++u) {
    const std::int64_t n = rest / others + (u <= rest % others ? 1 : 0);
    m.units.push_back({cat("unit.", u), {{cat("unit.", u, ".w"), {n}, {}, true}}, {}});
  }
  return m;
}

namespace {

struct NamedShape {
  std::function<ModelDescription(const std::string&)> make;
  std::string source;
};

GptShape gpt2(int C, int L, int H) { return {50257, 1024, C, L, H}; }

// Published dimensions (the models' config files on the Hugging Face hub, which match the papers).
const std::map<std::string, NamedShape>& table() {
  static const std::map<std::string, NamedShape> shapes = {
      {"gpt2", {[](const std::string& n) { return describe_gpt(gpt2(768, 12, 12), n); },
                "GPT-2 small (openai-community/gpt2): 124,439,808 parameters"}},
      {"gpt2-medium", {[](const std::string& n) { return describe_gpt(gpt2(1024, 24, 16), n); },
                       "GPT-2 medium (openai-community/gpt2-medium): 354,823,168 parameters"}},
      {"gpt2-large", {[](const std::string& n) { return describe_gpt(gpt2(1280, 36, 20), n); },
                      "GPT-2 large (openai-community/gpt2-large): 774,030,080 parameters"}},
      {"gpt2-xl", {[](const std::string& n) { return describe_gpt(gpt2(1600, 48, 25), n); },
                   "GPT-2 XL (openai-community/gpt2-xl): 1,557,611,200 parameters"}},
      {"llama2-7b", {[](const std::string& n) { return describe_llama({32000, 4096, 4096, 32, 32, 32, 11008}, n); },
                     "Llama 2 7B (meta-llama/Llama-2-7b-hf): 6,738,415,616 parameters"}},
      {"llama2-13b", {[](const std::string& n) { return describe_llama({32000, 4096, 5120, 40, 40, 40, 13824}, n); },
                      "Llama 2 13B (meta-llama/Llama-2-13b-hf): 13,015,864,320 parameters"}},
      {"llama-33b", {[](const std::string& n) { return describe_llama({32000, 2048, 6656, 60, 52, 52, 17920}, n); },
                     "LLaMA 33B (LLaMA 1, \"30B\" on the hub): 32,528,943,616 parameters"}},
      {"llama2-70b", {[](const std::string& n) { return describe_llama({32000, 4096, 8192, 80, 64, 8, 28672}, n); },
                      "Llama 2 70B (meta-llama/Llama-2-70b-hf, grouped-query, 8 KV heads): 68,976,648,192 parameters"}},
      {"llama3-8b", {[](const std::string& n) { return describe_llama({128256, 8192, 4096, 32, 32, 8, 14336}, n); },
                     "Llama 3 8B (meta-llama/Meta-Llama-3-8B, 8 KV heads): 8,030,261,248 parameters"}},
      {"llama3-70b", {[](const std::string& n) { return describe_llama({128256, 8192, 8192, 80, 64, 8, 28672}, n); },
                      "Llama 3 70B (meta-llama/Meta-Llama-3-70B, 8 KV heads): 70,553,706,496 parameters"}},
  };
  return shapes;
}

}  // namespace

std::vector<std::string> named_model_names() {
  std::vector<std::string> names;
  for (const auto& [name, shape] : table()) names.push_back(name);
  return names;
}

ModelDescription named_model(const std::string& name) {
  auto it = table().find(name);
  if (it == table().end()) {
    std::string known;
    for (const auto& n : named_model_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError(cat("[planner] unknown model '", name, "'; known models: ", known,
                          ". Or describe it: --params N --largest-unit N, or --vocab --seq-len --n-embd --n-layer --n-head"));
  }
  ModelDescription m = it->second.make(name);
  m.source = it->second.source;
  return m;
}

}  // namespace zero
