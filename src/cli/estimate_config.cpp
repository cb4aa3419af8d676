#include "cli/estimate_config.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace zero::cli {
namespace {

using nlohmann::json;

bool is_auto(const json& v) { return v.is_string() && v.get<std::string>() == "auto"; }

// An integer-valued number (DeepSpeed configs write sizes as 5e8) at `path`, if present.
std::optional<std::int64_t> integer(const json& obj, const std::string& key, const std::string& path) {
  if (!obj.contains(key) || is_auto(obj[key])) return std::nullopt;
  const json& v = obj[key];
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<std::int64_t>(v.get<double>()))) {
    return static_cast<std::int64_t>(v.get<double>());
  }
  throw ConfigError(cat("[estimate] ", path, key, " must be an integer, not ", v.dump()));
}

bool enabled(const json& root, const std::string& section) {
  if (!root.contains(section)) return false;
  const json& s = root[section];
  if (!s.is_object()) throw ConfigError(cat("[estimate] ", section, " must be an object, not ", s.dump()));
  if (!s.contains("enabled") || is_auto(s["enabled"])) return false;
  if (!s["enabled"].is_boolean()) throw ConfigError(cat("[estimate] ", section, ".enabled must be true or false"));
  return s["enabled"].get<bool>();
}

bool offload_to_cpu(const json& zero, const std::string& key) {
  if (!zero.contains(key)) return false;
  const json& o = zero[key];
  if (o.is_null()) return false;
  if (!o.is_object()) throw ConfigError(cat("[estimate] zero_optimization.", key, " must be an object, not ", o.dump()));
  const std::string device = o.value("device", std::string("none"));
  if (device == "none") return false;
  if (device == "cpu") return true;
  throw ConfigError(cat("[estimate] zero_optimization.", key, ".device is '", device,
                        "': the planner models 'cpu' and 'none' (zero has no NVMe tier yet)"));
}

// zero's own "offload_optimizer": {"delayed_update": {"enabled": true, ...}} (config/config.h).
bool delayed_update(const json& offload) {
  if (!offload.contains("delayed_update")) return false;
  const json& d = offload["delayed_update"];
  if (!d.is_object()) throw ConfigError(cat("[estimate] zero_optimization.offload_optimizer.delayed_update must be an object, not ", d.dump()));
  if (!d.contains("enabled")) return false;
  if (!d["enabled"].is_boolean()) throw ConfigError("[estimate] zero_optimization.offload_optimizer.delayed_update.enabled must be true or false");
  return d["enabled"].get<bool>();
}

ZeroSettings read_zero(const json& z) {
  if (!z.is_object()) throw ConfigError(cat("[estimate] zero_optimization must be an object, not ", z.dump()));
  const std::string at = "zero_optimization.";
  ZeroSettings s;
  if (auto v = integer(z, "stage", at)) {
    if (*v < 0 || *v > 3) throw ConfigError(cat("[estimate] zero_optimization.stage must be 0, 1, 2 or 3, not ", *v));
    s.stage = static_cast<int>(*v);
  }
  s.offload_optimizer = offload_to_cpu(z, "offload_optimizer");
  s.offload_param = offload_to_cpu(z, "offload_param");
  s.delayed_update = s.offload_optimizer && delayed_update(z["offload_optimizer"]);
  if (auto v = integer(z, "reduce_bucket_size", at)) s.reduce_bucket_size = *v;
  if (auto v = integer(z, "allgather_bucket_size", at)) s.allgather_bucket_size = *v;
  if (auto v = integer(z, "stage3_prefetch_bucket_size", at)) s.stage3_prefetch_bucket_size = *v;
  if (auto v = integer(z, "stage3_max_live_parameters", at)) s.stage3_max_live_parameters = *v;
  if (auto v = integer(z, "stage3_param_persistence_threshold", at)) s.stage3_param_persistence_threshold = *v;
  if (auto v = integer(z, "stage3_max_reuse_distance", at)) s.stage3_max_reuse_distance = *v;
  return s;
}

GptShape read_model(const json& m) {
  if (!m.is_object()) throw ConfigError(cat("[estimate] model must be an object, not ", m.dump()));
  if (m.contains("type") && m["type"] != "gpt") {
    throw ConfigError(cat("[estimate] model.type is ", m["type"].dump(), "; only \"gpt\" is known"));
  }
  GptShape g;
  auto get = [&](const char* key, int& out) {
    if (auto v = integer(m, key, "model.")) out = static_cast<int>(*v);
  };
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
  std::ifstream in(path);
  if (!in) throw ConfigError(cat("[estimate] cannot open the config file ", path, ": check the path"));
  json root;
  try {
    root = json::parse(in);
  } catch (const json::parse_error& e) {
    throw ConfigError(cat("[estimate] ", path, " is not valid JSON: ", e.what()));
  }
  if (!root.is_object()) throw ConfigError(cat("[estimate] ", path, " must hold a JSON object"));
  EstimateConfig c;
  if (root.contains("zero_optimization")) c.zero = read_zero(root["zero_optimization"]);
  if (enabled(root, "bf16") || enabled(root, "fp16")) c.dtype = DtypeMode::kMixed;
  if (auto v = integer(root, "train_micro_batch_size_per_gpu", "")) c.micro_batch = static_cast<int>(*v);
  if (auto v = integer(root, "gradient_accumulation_steps", "")) c.gradient_accumulation_steps = static_cast<int>(*v);
  if (root.contains("model")) c.gpt = read_model(root["model"]);
  return c;
}

}  // namespace zero::cli
