#include "config/reader.h"

#include <algorithm>
#include <cctype>
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

std::string describe_value(const nlohmann::json& value) {
  std::string s = value.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
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

Section::Section(const nlohmann::json& j, std::string path, std::vector<KeyRule> rules, std::vector<std::string>* ignored)
    : j_(j), path_(std::move(path)), rules_(std::move(rules)), ignored_(ignored) {
  if (!j_.is_object()) {
    throw ConfigError(cat("[config] ", path_.empty() ? std::string("the config") : path_, " must be a JSON object ({...}), found ",
                          describe_value(j_), " (", kind_of(j_), ")"));
  }
  // Three passes, so that the most useful message wins: a typo first, then an unsupported feature,
  // then a bad type.
  for (const auto& [key, value] : j_.items()) rule(key);
  for (const auto& [key, value] : j_.items()) {
    const KeyRule& r = rule(key);
    if (r.use == Use::unsupported && !(r.accepted && value == *r.accepted)) {
      const std::string fix = r.accepted ? cat("; set it to ", r.accepted->dump(), " or remove it") : std::string("; remove it");
      throw ConfigError(cat("[config] ", path_of(key), " = ", describe_value(value),
                            " is known but not supported yet: ", r.why, fix));
    }
  }
  for (const auto& [key, value] : j_.items()) check_key(key, value);
}

const KeyRule* Section::find_rule(const std::string& key) const {
  auto it = std::find_if(rules_.begin(), rules_.end(), [&](const KeyRule& r) { return r.name == key; });
  return it == rules_.end() ? nullptr : &*it;
}

const KeyRule& Section::rule(const std::string& key) const {
  if (const KeyRule* r = find_rule(key)) return *r;
  std::vector<std::string> names;
  for (const KeyRule& r : rules_) names.push_back(r.name);
  const std::string near = nearest(key, names);
  const std::string where = path_.empty() ? std::string("at the top level") : cat("in '", path_, "'");
  std::string msg = cat("[config] unknown key '", path_of(key), "';");
  if (suggestion_distance(key, near) <= std::max<int>(2, static_cast<int>(key.size()) / 2)) {
    msg += cat(" did you mean '", path_of(near), "'?");
  } else {  // nothing close: the whole list is the better hint
    std::string all;
    for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
    msg += cat(" no known key is close to it. The keys known ", where, " are: ", all, ".");
  }
  throw ConfigError(msg + " Fix or remove the key.");
}

void Section::check_key(const std::string& key, const nlohmann::json& value) const {
  const KeyRule& r = rule(key);
  if (has_type(value, r.type)) {
    if (r.use == Use::ignore && ignored_ != nullptr) ignored_->push_back(path_of(key));
    return;
  }
  if (value.is_string() && value.get<std::string>() == "auto") {
    fail(key, cat("is \"auto\", a Hugging Face Trainer placeholder that only the Trainer fills in; write ",
                  describe_type(r.type), " instead"));
  }
  fail(key, cat("must be ", describe_type(r.type), ", found ", describe_value(value), " (", kind_of(value), ")"));
}

bool Section::has(const std::string& key) const {
  auto it = j_.find(key);
  return it != j_.end() && !it->is_null();
}

const nlohmann::json& Section::at(const std::string& key) const {
  ZERO_CHECK(has(key), "no key ", path_of(key));
  return j_.at(key);
}

std::string Section::path_of(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

void Section::fail(const std::string& key, const std::string& what) const {
  throw ConfigError(cat("[config] ", path_of(key), " ", what));
}

bool Section::get_bool(const std::string& key, bool fallback) const {
  ZERO_CHECK(find_rule(key) && find_rule(key)->type == JsonType::boolean, path_of(key), " is not a boolean key");
  return has(key) ? at(key).get<bool>() : fallback;
}

std::int64_t Section::get_int(const std::string& key, std::int64_t fallback, std::int64_t min, std::int64_t max) const {
  ZERO_CHECK(find_rule(key) && find_rule(key)->type == JsonType::integer, path_of(key), " is not an integer key");
  if (!has(key)) return fallback;
  const nlohmann::json& v = at(key);
  std::int64_t x = 0;
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    fail(key, cat("is too large: ", v.dump()));
  }
  x = v.is_number_float() ? static_cast<std::int64_t>(v.get<double>()) : v.get<std::int64_t>();
  if (x < min || x > max) {
    if (max == std::numeric_limits<std::int64_t>::max()) fail(key, cat("must be at least ", min, ", not ", x));
    fail(key, cat("must be between ", min, " and ", max, ", not ", x));
  }
  return x;
}

double Section::get_number(const std::string& key, double fallback) const {
  ZERO_CHECK(find_rule(key) && find_rule(key)->type == JsonType::number, path_of(key), " is not a number key");
  return has(key) ? at(key).get<double>() : fallback;
}

std::string Section::get_string(const std::string& key, const std::string& fallback) const {
  ZERO_CHECK(find_rule(key) && find_rule(key)->type == JsonType::string, path_of(key), " is not a string key");
  return has(key) ? at(key).get<std::string>() : fallback;
}

Section Section::child(const std::string& key, std::vector<KeyRule> rules) const {
  ZERO_CHECK(has(key), "no section ", path_of(key));
  return Section(at(key), path_of(key), std::move(rules), ignored_);
}

}  // namespace zero::config_detail
