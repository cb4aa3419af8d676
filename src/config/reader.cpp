#include "config/reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "common/error.h"

namespace zero::config_detail {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_integral(const nlohmann::json& v) {
  if (v.is_number_integer()) return true;  // signed and unsigned
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  // 2e8 is a float in JSON; DeepSpeed's configs write bucket sizes that way.
  return std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18;
}

bool has_type(const nlohmann::json& v, JsonType type) {
  switch (type) {
    case JsonType::boolean: return v.is_boolean();
    case JsonType::integer: return is_integral(v);
    case JsonType::number: return v.is_number();
    case JsonType::string: return v.is_string();
    case JsonType::object: return v.is_object() || v.is_null();  // null: the section is absent
    case JsonType::array: return v.is_array();
    case JsonType::any: return true;
  }
  return false;
}

std::string kind_of(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

}  // namespace

std::string describe_type(JsonType type) {
  switch (type) {
    case JsonType::boolean: return "a boolean (true or false)";
    case JsonType::integer: return "an integer";
    case JsonType::number: return "a number";
    case JsonType::string: return "a string";
    case JsonType::object: return "an object";
    case JsonType::array: return "an array";
    case JsonType::any: return "any value";
  }
  return "?";
}

// A number as written: a double that came from a float (zero's defaults are floats) in the
// float's shortest form, 0.001 rather than 0.0010000000474974513.
std::string number_text(double d) {
  const float f = static_cast<float>(d);
  if (std::isfinite(d) && static_cast<double>(f) == d && d != std::floor(d)) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, f);
    return std::string(buf, r.ptr);
  }
  return nlohmann::json(d).dump();
}

std::string describe_value(const nlohmann::json& value) {
  if (value.is_number_float()) return number_text(value.get<double>());
  if (value.is_array() && !value.empty() && std::all_of(value.begin(), value.end(), [](const auto& v) { return v.is_number_float(); })) {
    std::string s = "[";
    for (const nlohmann::json& v : value) s += (s.size() > 1 ? ", " : "") + number_text(v.get<double>());
    return s.size() > 60 ? s.substr(0, 57) + "..." : s + "]";
  }
  if (value.is_structured() && nesting_depth(value) > kMaxConfigDepth) return value.is_object() ? "{...}" : "[...]";  // dump() recurses
  // replace: a string from the command line may hold bytes that are not UTF-8.
  std::string s = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

int nesting_depth(const nlohmann::json& j) {
  int deepest = 0;
  std::vector<std::pair<const nlohmann::json*, int>> unvisited = {{&j, 0}};
  while (!unvisited.empty()) {
    const auto [node, depth] = unvisited.back();
    unvisited.pop_back();
    if (!node->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    if (deepest > kMaxConfigDepth) return deepest;  // deep enough to refuse: stop counting
    for (const nlohmann::json& child : *node) unvisited.push_back({&child, depth + 1});
  }
  return deepest;
}

std::vector<KeyRule> allow_auto(std::vector<KeyRule> rules, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto it = std::find_if(rules.begin(), rules.end(), [&](const KeyRule& r) { return r.name == name; });
    ZERO_CHECK(it != rules.end(), "allow_auto: no rule '", name, "'");
    it->auto_ok = true;
  }
  return rules;
}

int edit_distance(const std::string& a_in, const std::string& b_in) {
  const std::string a = lower(a_in), b = lower(b_in);
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));  // (n+1, m+1)
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);  // "stgae" -> "stage" is one typo
      }
    }
  }
  return d[n][m];
}

int suggestion_distance(const std::string& word, const std::string& candidate) {
  // A key cut short or run on ("train_micro_batch_size" for "train_micro_batch_size_per_gpu") is
  // one mistake, however many letters it drops.
  const std::string w = lower(word), c = lower(candidate);
  const std::size_t shorter = std::min(w.size(), c.size());
  if (shorter >= 4 && w.compare(0, shorter, c, 0, shorter) == 0) return std::min(1, edit_distance(w, c));
  return edit_distance(w, c);
}

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  ZERO_CHECK(!candidates.empty(), "no candidates for '", word, "'");
  std::string best = candidates.front();
  int best_d = suggestion_distance(word, best);
  for (const std::string& c : candidates) {
    const int d = suggestion_distance(word, c);
    if (d < best_d) best = c, best_d = d;
  }
  return best;
}

namespace {

const nlohmann::json& object_or_empty(const nlohmann::json& j) {
  static const nlohmann::json empty = nlohmann::json::object();
  return j.is_object() ? j : empty;
}

bool is_auto_string(const nlohmann::json& v) { return v.is_string() && v.get_ref<const std::string&>() == "auto"; }

// A typo of a top-level key is at most two edits away (or a key cut short); anything further is a
// key DeepSpeed would silently ignore, so zero accepts it with a warning.
bool close_enough_for_a_typo(const std::string& key, const std::string& near) {
  return suggestion_distance(key, near) <= (key.size() <= 4 ? 1 : 2);
}

// The keys the Hugging Face Trainer (integrations/deepspeed.py) and accelerate fill in when "auto".
bool trainer_fills(const std::string& path) {
  static const std::set<std::string> kFilled = {
      "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "gradient_clipping",
      "optimizer.params.lr", "optimizer.params.betas", "optimizer.params.eps", "optimizer.params.weight_decay",
      "scheduler.params.warmup_min_lr", "scheduler.params.warmup_max_lr", "scheduler.params.warmup_num_steps",
      "scheduler.params.total_num_steps", "fp16.enabled", "bf16.enabled", "amp.enabled", "amp.opt_level",
      "zero_optimization.reduce_bucket_size", "zero_optimization.stage3_prefetch_bucket_size",
      "zero_optimization.stage3_param_persistence_threshold", "zero_optimization.stage3_gather_16bit_weights_on_model_save"};
  return kFilled.count(path) > 0;
}

}  // namespace

Section::Section(const nlohmann::json& j, std::string path, std::vector<KeyRule> rules, ReadLog* log, std::string unknown_hint)
    : j_(object_or_empty(j)), path_(std::move(path)), rules_(std::move(rules)), log_(log), unknown_hint_(std::move(unknown_hint)) {
  ZERO_CHECK(log_ != nullptr, "a Section needs a ReadLog");
  if (!j.is_object()) {
    log_->problem(cat("[config] ", path_.empty() ? std::string("the config") : path_, " must be a JSON object ({...}), found ",
                      describe_value(j), " (", kind_of(j), ")"));
    return;
  }
  for (const auto& [key, value] : j_.items()) {
    if (find_rule(key) == nullptr) {
      check_unknown(key);
      continue;
    }
    const KeyRule& r = *find_rule(key);
    if (r.use == Use::unsupported && !(r.accepted && value == *r.accepted) && !value.is_null()) {
      const std::string fix = r.accepted ? cat("; set it to ", describe_value(*r.accepted), " or remove it") : std::string("; remove it");
      fail(key, cat("= ", describe_value(value), " is known but not supported yet: ", r.why, fix));
      continue;
    }
    check_key(key, value);
  }
}

const KeyRule* Section::find_rule(const std::string& key) const {
  auto it = std::find_if(rules_.begin(), rules_.end(), [&](const KeyRule& r) { return r.name == key; });
  return it == rules_.end() ? nullptr : &*it;
}

void Section::check_unknown(const std::string& key) const {
  std::vector<std::string> names;
  for (const KeyRule& r : rules_) names.push_back(r.name);
  const std::string near = names.empty() ? std::string() : nearest(key, names);
  const bool top = path_.empty();
  if (top && !log_->strict && (near.empty() || !close_enough_for_a_typo(key, near))) {
    log_->unknown.push_back(key);  // DeepSpeed reads the keys it knows and ignores the rest
    return;
  }
  const std::string where = top ? std::string("at the top level") : cat("in '", path_, "'");
  std::string msg = cat("[config] unknown key '", path_of(key), "'", unknown_hint_, ";");
  if (!near.empty() && suggestion_distance(key, near) <= std::max<int>(2, static_cast<int>(key.size()) / 2)) {
    msg += cat(" did you mean '", path_of(near), "'?");
  } else if (top) {
    msg += " it is not a DeepSpeed key (--strict-config refuses unknown top-level keys).";
  } else if (unknown_hint_.empty()) {  // nothing close: the whole list is the better hint
    std::string all;
    for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
    msg += cat(" no known key is close to it. The keys known ", where, " are: ", all, ".");
  }
  log_->problem(msg + " Fix or remove the key.");
}

void Section::check_key(const std::string& key, const nlohmann::json& value) const {
  const KeyRule& r = *find_rule(key);
  if (is_auto_string(value) && r.type != JsonType::string && r.type != JsonType::any) {
    if (r.auto_ok) {
      if (r.use == Use::ignore) log_->ignored.push_back(path_of(key));
      return;
    }
    if (trainer_fills(path_of(key))) {
      fail(key, cat("is \"auto\", which the Hugging Face Trainer fills in, but zero does not resolve it here yet; write ",
                    describe_type(r.type), " instead"));
    } else {
      fail(key, cat("is \"auto\", a Hugging Face Trainer placeholder, but the Trainer does not fill in this key either; write ",
                    describe_type(r.type), " instead"));
    }
    return;
  }
  if (has_type(value, r.type)) {
    if (r.use == Use::ignore) log_->ignored.push_back(path_of(key));
    return;
  }
  if (r.type == JsonType::integer && value.is_number_float() && std::isfinite(value.get<double>()) &&
      value.get<double>() == std::floor(value.get<double>())) {
    fail(key, cat("is ", describe_value(value), ", too large for an integer (at most 9.2e18)"));
    return;
  }
  fail(key, cat("must be ", describe_type(r.type), ", found ", describe_value(value), " (", kind_of(value), ")"));
}

bool Section::present(const std::string& key) const { return j_.contains(key); }

bool Section::has(const std::string& key) const {
  auto it = j_.find(key);
  return it != j_.end() && !it->is_null() && !is_bad(key) && !is_auto(key);
}

bool Section::is_auto(const std::string& key) const {
  const KeyRule* r = find_rule(key);
  auto it = j_.find(key);
  return r != nullptr && r->auto_ok && it != j_.end() && is_auto_string(*it) && !is_bad(key);
}

bool Section::is_bad(const std::string& key) const { return bad_.count(key) > 0; }

const nlohmann::json& Section::at(const std::string& key) const {
  ZERO_CHECK(has(key), "no key ", path_of(key));
  return j_.at(key);
}

std::string Section::path_of(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

void Section::fail(const std::string& key, const std::string& what) const {
  if (!bad_.insert(key).second) return;  // one message per key
  log_->problem(cat("[config] ", path_of(key), " ", what));
}

void Section::set_auto(const std::string& key, const nlohmann::json& value, const std::string& source) const {
  auto_values_[key] = {value, source};
}

const nlohmann::json& Section::resolve_auto(const std::string& key, const nlohmann::json& fallback) const {
  auto it = auto_values_.find(key);
  if (it == auto_values_.end()) it = auto_values_.emplace(key, std::make_pair(fallback, std::string("zero's default, as if the key were absent"))).first;
  const std::string path = path_of(key);
  if (log_->auto_logged.insert(path).second) {
    log_->autos.push_back(cat(path, " = \"auto\" -> ", describe_value(it->second.first), " (", it->second.second, ")"));
  }
  return it->second.first;
}

std::optional<nlohmann::json> Section::auto_or_none(const std::string& key, const nlohmann::json& fallback) const {
  if (!is_auto(key)) return std::nullopt;
  return resolve_auto(key, fallback);
}

bool Section::get_bool(const std::string& key, bool fallback) const {
  ZERO_CHECK(find_rule(key) && find_rule(key)->type == JsonType::boolean, path_of(key), " is not a boolean key");
  if (auto a = auto_or_none(key, fallback)) return a->get<bool>();
  return has(key) ? at(key).get<bool>() : fallback;
}

std::int64_t Section::get_int(const std::string& key, std::int64_t fallback, std::int64_t min, std::int64_t max) const {
  ZERO_CHECK(find_rule(key) && find_rule(key)->type == JsonType::integer, path_of(key), " is not an integer key");
  if (auto a = auto_or_none(key, fallback)) return a->get<std::int64_t>();
  if (!has(key)) return fallback;
  const nlohmann::json& v = at(key);
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    fail(key, cat("is too large: ", v.dump()));
    return fallback;
  }
  const std::int64_t x = v.is_number_float() ? static_cast<std::int64_t>(v.get<double>()) : v.get<std::int64_t>();
  if (x < min || x > max) {
    if (max == std::numeric_limits<std::int64_t>::max()) fail(key, cat("must be at least ", min, ", not ", x));
    else fail(key, cat("must be between ", min, " and ", max, ", not ", x));
    return fallback;
  }
  return x;
}

double Section::get_number(const std::string& key, double fallback) const {
  ZERO_CHECK(find_rule(key) && find_rule(key)->type == JsonType::number, path_of(key), " is not a number key");
  if (auto a = auto_or_none(key, fallback)) return a->get<double>();
  return has(key) ? at(key).get<double>() : fallback;
}

float Section::get_float(const std::string& key, float fallback) const {
  const double v = get_number(key, fallback);
  if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max()) {
    fail(key, cat("is ", v, ", beyond the range of a 32-bit float (about 3.4e38); write a smaller number"));
    return fallback;
  }
  return static_cast<float>(v);
}

std::string Section::get_string(const std::string& key, const std::string& fallback) const {
  ZERO_CHECK(find_rule(key) && find_rule(key)->type == JsonType::string, path_of(key), " is not a string key");
  return has(key) ? at(key).get<std::string>() : fallback;
}

Section Section::child(const std::string& key, std::vector<KeyRule> rules, std::string unknown_hint) const {
  ZERO_CHECK(has(key), "no section ", path_of(key));
  return Section(at(key), path_of(key), std::move(rules), log_, std::move(unknown_hint));
}

}  // namespace zero::config_detail
