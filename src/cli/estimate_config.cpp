#include "cli/estimate_config.h"

#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/input_file.h"

namespace zero::cli {
namespace {

using nlohmann::json;

constexpr std::uint64_t kMaxConfigBytes = 64 << 20;  // a DeepSpeed config is a few KB

bool is_auto(const json& v) { return v.is_string() && v.get<std::string>() == "auto"; }

constexpr std::int64_t kMaxCount = std::int64_t{1} << 53;  // exact in a double, and far above any real size

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

bool enabled(const json& root, const std::string& section) {
  if (!root.contains(section)) return false;
  const json& s = root[section];
  if (!s.is_object()) throw ConfigError(cat("[estimate] ", section, " must be an object, not ", brief(s)));
  if (!s.contains("enabled") || is_auto(s["enabled"])) return false;
  if (!s["enabled"].is_boolean()) throw ConfigError(cat("[estimate] ", section, ".enabled must be true or false"));
  return s["enabled"].get<bool>();
}

bool offload_to_cpu(const json& zero, const std::string& key) {
  if (!zero.contains(key)) return false;
  const json& o = zero[key];
  if (o.is_null()) return false;
  if (!o.is_object()) throw ConfigError(cat("[estimate] zero_optimization.", key, " must be an object, not ", brief(o)));
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
  if (!d.is_object()) throw ConfigError(cat("[estimate] zero_optimization.offload_optimizer.delayed_update must be an object, not ", brief(d)));
  if (!d.contains("enabled")) return false;
  if (!d["enabled"].is_boolean()) throw ConfigError("[estimate] zero_optimization.offload_optimizer.delayed_update.enabled must be true or false");
  return d["enabled"].get<bool>();
}

ZeroSettings read_zero(const json& z) {
  if (!z.is_object()) throw ConfigError(cat("[estimate] zero_optimization must be an object, not ", brief(z)));
  const std::string at = "zero_optimization.";
  ZeroSettings s;
  if (auto v = integer(z, "stage", at, 0, 3)) s.stage = static_cast<int>(*v);
  s.offload_optimizer = offload_to_cpu(z, "offload_optimizer");
  s.offload_param = offload_to_cpu(z, "offload_param");
  s.delayed_update = s.offload_optimizer && delayed_update(z["offload_optimizer"]);
  if (auto v = integer(z, "reduce_bucket_size", at, 1, kMaxCount)) s.reduce_bucket_size = *v;
  if (auto v = integer(z, "allgather_bucket_size", at, 1, kMaxCount)) s.allgather_bucket_size = *v;
  if (auto v = integer(z, "stage3_prefetch_bucket_size", at, 0, kMaxCount)) s.stage3_prefetch_bucket_size = *v;
  if (auto v = integer(z, "stage3_max_live_parameters", at, 0, kMaxCount)) s.stage3_max_live_parameters = *v;
  if (auto v = integer(z, "stage3_param_persistence_threshold", at, 0, kMaxCount)) s.stage3_param_persistence_threshold = *v;
  if (auto v = integer(z, "stage3_max_reuse_distance", at, 0, kMaxCount)) s.stage3_max_reuse_distance = *v;
  if (z.contains("overlap_comm")) {
    if (!z["overlap_comm"].is_boolean()) throw ConfigError("[estimate] zero_optimization.overlap_comm must be true or false");
    s.overlap_comm = z["overlap_comm"].get<bool>();
  }
  return s;
}

GptShape read_model(const json& m) {
  if (!m.is_object()) throw ConfigError(cat("[estimate] model must be an object, not ", brief(m)));
  if (m.contains("type") && m["type"] != "gpt") {
    throw ConfigError(cat("[estimate] model.type is ", brief(m["type"]), "; only \"gpt\" is known"));
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
  if (root.contains("zero_optimization")) c.zero = read_zero(root["zero_optimization"]);
  if (enabled(root, "bf16") || enabled(root, "fp16")) c.dtype = DtypeMode::kMixed;
  if (root.contains("train_micro_batch_size_per_gpu")) c.micro_batch = small_integer(root, "train_micro_batch_size_per_gpu", "", 1);
  if (root.contains("gradient_accumulation_steps")) c.gradient_accumulation_steps = small_integer(root, "gradient_accumulation_steps", "", 1);
  if (root.contains("model")) c.gpt = read_model(root["model"]);
  const json* type = root.contains("optimizer") && root["optimizer"].is_object() && root["optimizer"].contains("type")
                         ? &root["optimizer"]["type"] : nullptr;
  if (type != nullptr && type->is_string()) {
    std::string low = type->get<std::string>();
    for (char& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    c.lamb = low == "lamb";  // DeepSpeed lower-cases the type
  }
  return c;
}

}  // namespace zero::cli
