// Reading one JSON object of the config against a table of the keys it may hold (internal to the
// config layer).
//
// Every level of the file (the top, "zero_optimization", "optimizer.params", ...) has a rule
// table: each known key, its JSON type, and what zero does with it (read, ignore, unsupported).
// Building a Section checks the whole level at once, before any value is used: every unknown key
// (with the nearest known key), every known-but-unsupported key and every value of the wrong type
// is recorded in the ReadLog, which all sections of one file share. Nothing stops at the first
// problem: parse_config reports them all in one error, so a user edits the file once.
//
// "auto" (the Hugging Face Trainer's placeholder) is accepted where the rule says so
// (allow_auto); the getters then return what the reader declared with set_auto, or the fallback
// (zero's default), and log the resolution.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
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
  bool auto_ok = false;  // "auto" accepted (the Hugging Face Trainer fills this key in); see allow_auto
};

// The rules with auto_ok set on the named keys (each must be in the table).
std::vector<KeyRule> allow_auto(std::vector<KeyRule> rules, std::initializer_list<const char*> names);

// What reading one config found, shared by all its sections.
struct ReadLog {
  std::vector<std::string> problems;  // each a whole message, "[config] <path> ..."
  std::vector<std::string> ignored;   // paths of keys accepted and ignored
  std::vector<std::string> unknown;   // top-level keys DeepSpeed would ignore too, accepted with a warning
  std::vector<std::string> autos;     // "<path> = \"auto\" -> <value> (<where from>)"
  std::set<std::string> auto_logged;  // paths already in autos
  bool strict = false;                // unknown top-level keys are errors too (--strict-config)
  void problem(std::string message) { problems.push_back(std::move(message)); }
};

class Section {
 public:
  // j should be an object (a problem is logged otherwise, and the section reads as empty). path is
  // the dotted path of j ("" at the top). unknown_hint is appended to unknown-key messages.
  Section(const nlohmann::json& j, std::string path, std::vector<KeyRule> rules, ReadLog* log, std::string unknown_hint = "");

  // Present, not null (null counts as absent for optional sections, as in DeepSpeed), not "auto"
  // and not already reported as wrong.
  bool has(const std::string& key) const;
  bool present(const std::string& key) const;  // in the file at all, whatever its value
  bool is_auto(const std::string& key) const;  // "auto" where the rule accepts it
  bool is_bad(const std::string& key) const;   // a problem was reported for it
  const nlohmann::json& at(const std::string& key) const;  // has(key) must hold
  std::string path_of(const std::string& key) const;       // "zero_optimization.stage"

  // What "auto" means for `key` here (the getters return it), and where it comes from.
  void set_auto(const std::string& key, const nlohmann::json& value, const std::string& source) const;
  // Logs the resolution of an "auto" key once and returns the value.
  const nlohmann::json& resolve_auto(const std::string& key, const nlohmann::json& fallback) const;

  // Getters: the value, or the fallback when the key is absent or already reported; an "auto" key
  // gives set_auto's value or else the fallback (zero's default), logged.
  bool get_bool(const std::string& key, bool fallback) const;
  // Integers may be written as integral floats (2e8); min/max bound the value with a message.
  std::int64_t get_int(const std::string& key, std::int64_t fallback, std::int64_t min, std::int64_t max) const;
  double get_number(const std::string& key, double fallback) const;
  // A number that must be finite and fit a float (learning rates, betas ...).
  float get_float(const std::string& key, float fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  // A sub-object as a Section with its own rules (has(key) must hold).
  Section child(const std::string& key, std::vector<KeyRule> rules, std::string unknown_hint = "") const;

  // Logs "[config] <path.key> <what>" and marks the key as reported (its getters give fallbacks).
  void fail(const std::string& key, const std::string& what) const;
  ReadLog& log() const { return *log_; }

 private:
  const KeyRule* find_rule(const std::string& key) const;  // nullptr: not in the table
  void check_unknown(const std::string& key) const;
  void check_key(const std::string& key, const nlohmann::json& value) const;
  std::optional<nlohmann::json> auto_or_none(const std::string& key, const nlohmann::json& fallback) const;

  const nlohmann::json& j_;
  std::string path_;
  std::vector<KeyRule> rules_;
  ReadLog* log_;
  std::string unknown_hint_;
  mutable std::set<std::string> bad_;
  mutable std::map<std::string, std::pair<nlohmann::json, std::string>> auto_values_;  // key -> (value, source)
};

// Optimal-string-alignment distance (a transposition counts 1), case-insensitive.
int edit_distance(const std::string& a, const std::string& b);
// edit_distance, except that a prefix of the other (at least 4 letters) counts as one mistake.
int suggestion_distance(const std::string& word, const std::string& candidate);
// The candidate nearest to word (the first of equals); candidates must not be empty.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

// "a string", "an integer" ... and a short rendering of a value, for messages (never throws).
std::string describe_type(JsonType type);
std::string describe_value(const nlohmann::json& value);

// The deepest nesting allowed in a config (DeepSpeed's files nest 4 levels); deeper is an error.
constexpr int kMaxConfigDepth = 64;
// The depth of j's nesting (a scalar is 0), counted without recursion.
int nesting_depth(const nlohmann::json& j);

// What "auto" values and defaults depend on, known before the sections that need them are read.
struct AutoContext {
  std::int64_t train_steps = 0;  // the run's optimizer steps: scheduler total_num_steps
  float lr = 0;                  // the optimizer's learning rate: scheduler warmup_max_lr
  std::int64_t hidden = 0;       // the model's hidden size (n_embd): bucket sizes
};

// The sections with files of their own.
// zero_optimization into the engine's stage, placement, buckets, stage-3 schedule and overlap.
void read_zero(const Section& top, const AutoContext& ctx, EngineSettings& settings);  // zero_section.cpp
Schedule read_scheduler(const Section& top, const AutoContext& ctx);   // schedule.cpp
std::vector<KeyRule> zero_rules();                                     // zero_section.cpp
std::vector<KeyRule> activation_checkpointing_rules();                 // activation_section.cpp
void read_activation_checkpointing(const Section& top, ModelSection& m);  // activation_section.cpp
std::vector<KeyRule> offload_rules(bool optimizer);                    // zero_section.cpp
// "optimizer": the kind and its hyperparameters; type_name gets the type as DeepSpeed spells it.
void read_optimizer(const Section& top, EngineSettings& settings, std::string& type_name);  // optimizer_section.cpp
std::vector<KeyRule> adam_param_rules();                               // optimizer_section.cpp
std::vector<KeyRule> lamb_param_rules();                               // optimizer_section.cpp
std::vector<KeyRule> onebit_adam_param_rules(bool zero_one);           // optimizer_section.cpp
std::vector<KeyRule> train_checkpoints_rules();                        // train_sections.cpp
CheckpointSection read_train_checkpoints(const Section& top);          // train_sections.cpp
std::vector<KeyRule> train_eval_rules();                               // train_sections.cpp
EvalSection read_train_eval(const Section& top);                       // train_sections.cpp

}  // namespace zero::config_detail
