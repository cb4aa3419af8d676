#include "planner/model_shapes.h"

#include <algorithm>
#include <functional>
#include <map>

#include "common/error.h"

namespace zero {

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

// A LLaMA of Hugging Face's config.json fields, untied (every preset here is).
LlamaShape llama(int V, int T, int C, int F, int L, int H, int KV, float eps, double theta) {
  LlamaShape s;
  s.vocab_size = V, s.seq_len = T, s.hidden = C, s.intermediate = F, s.layers = L, s.heads = H, s.kv_heads = KV;
  s.rms_norm_eps = eps, s.rope_theta = theta, s.tie_word_embeddings = false;
  return s;
}

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
      {"llama2-7b", {[](const std::string& n) { return describe_llama(llama(32000, 4096, 4096, 11008, 32, 32, 32, 1e-5f, 10000.0), n); },
                     "Llama 2 7B (meta-llama/Llama-2-7b-hf): 6,738,415,616 parameters"}},
      {"llama2-13b", {[](const std::string& n) { return describe_llama(llama(32000, 4096, 5120, 13824, 40, 40, 40, 1e-5f, 10000.0), n); },
                      "Llama 2 13B (meta-llama/Llama-2-13b-hf): 13,015,864,320 parameters"}},
      {"llama-33b", {[](const std::string& n) { return describe_llama(llama(32000, 2048, 6656, 17920, 60, 52, 52, 1e-6f, 10000.0), n); },
                     "LLaMA 33B (LLaMA 1, \"30B\" on the hub): 32,528,943,616 parameters"}},
      {"llama2-70b", {[](const std::string& n) { return describe_llama(llama(32000, 4096, 8192, 28672, 80, 64, 8, 1e-5f, 10000.0), n); },
                      "Llama 2 70B (meta-llama/Llama-2-70b-hf, grouped-query, 8 KV heads): 68,976,648,192 parameters"}},
      {"llama3-8b", {[](const std::string& n) { return describe_llama(llama(128256, 8192, 4096, 14336, 32, 32, 8, 1e-5f, 500000.0), n); },
                     "Llama 3 8B (meta-llama/Meta-Llama-3-8B, 8 KV heads): 8,030,261,248 parameters"}},
      {"tinyllama-1.1b", {[](const std::string& n) { return describe_llama(llama(32000, 2048, 2048, 5632, 22, 32, 4, 1e-5f, 10000.0), n); },
                          "TinyLlama 1.1B (TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T, 4 KV heads): 1,100,048,384 parameters"}},
      {"llama3-70b", {[](const std::string& n) { return describe_llama(llama(128256, 8192, 8192, 28672, 80, 64, 8, 1e-5f, 500000.0), n); },
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
