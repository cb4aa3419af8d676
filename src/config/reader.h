// Reading one JSON object of the config against a table of the keys it may hold (internal to the
// config layer).
//
// Every level of the file (the top, "zero_optimization", "optimizer.params", ...) has a rule
// table: each known key, its JSON type, and what zero does with it (read, ignore, unsupported).
// Building a Section checks the whole level at once, before any value is used, so an unknown key
// is reported first (with the nearest known key), then a known-but-unsupported key, then a value
// of the wrong type. The getters then read values already known to have the right type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace zero::config_detail {

enum class JsonType { boolean, integer, number, string, object, array, any };

enum class Use {
  read,         // parsed into TrainConfig by the section's reader
  ignore,       // accepted and ignored: no numerical effect (the rule's `why` says what it does)
  unsupported,  // known but not supported yet: an error, unless the value equals `accepted`
};

struct KeyRule {
  std::string name;
  Use use;
  JsonType type;
  std::string why;  // ignore: why that is safe; unsupported: what it is and what to do instead
  std::optional<nlohmann::json> accepted = std::nullopt;  // unsupported: the no-op value allowed
};

class Section {
 public:
  // j must be an object (ConfigError otherwise). path is the dotted path of j ("" at the top).
  // Ignored keys present in j are appended, as full paths, to *ignored.
  Section(const nlohmann::json& j, std::string path, std::vector<KeyRule> rules, std::vector<std::string>* ignored);

  // Present and not null (null counts as absent for optional sections, as in DeepSpeed).
  bool has(const std::string& key) const;
  const nlohmann::json& at(const std::string& key) const;  // has(key) must hold
  std::string path_of(const std::string& key) const;       // "zero_optimization.stage"

  bool get_bool(const std::string& key, bool fallback) const;
  // Integers may be written as integral floats (2e8); min/max bound the value with a message.
  std::int64_t get_int(const std::string& key, std::int64_t fallback, std::int64_t min, std::int64_t max) const;
  double get_number(const std::string& key, double fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  // A sub-object as a Section with its own rules (has(key) must hold).
  Section child(const std::string& key, std::vector<KeyRule> rules) const;

  // Throws ConfigError("[config] <path.key> <what>").
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

 private:
  const KeyRule* find_rule(const std::string& key) const;  // nullptr: not in the table
  const KeyRule& rule(const std::string& key) const;       // ConfigError naming the nearest key
  void check_key(const std::string& key, const nlohmann::json& value) const;

  const nlohmann::json& j_;
  std::string path_;
  std::vector<KeyRule> rules_;
  std::vector<std::string>* ignored_;
};

// Optimal-string-alignment distance (a transposition counts 1), case-insensitive.
int edit_distance(const std::string& a, const std::string& b);
// edit_distance, except that a prefix of the other (at least 4 letters) counts as one mistake.
int suggestion_distance(const std::string& word, const std::string& candidate);
// The candidate nearest to word (the first of equals); candidates must not be empty.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

// "a string", "an integer" ... and a short rendering of a value, for messages.
std::string describe_type(JsonType type);
std::string describe_value(const nlohmann::json& value);

// The sections with files of their own.
ZeroConfig read_zero(const Section& top);           // zero_section.cpp
Schedule read_scheduler(const Section& top);        // schedule.cpp

}  // namespace zero::config_detail
