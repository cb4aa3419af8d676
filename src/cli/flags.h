// Long command-line flags, validated: `--name value` or `--name=value`, and `--switch`.
// An unknown flag, a missing or empty value, or a malformed value is a ConfigError that names it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zero::cli {

struct FlagSpec {
  std::string name;  // without the dashes
  std::string help;
  bool takes_value = true;
  std::string default_value;  // shown in --help
};

class Flags {
 public:
  // Parses args (the words after the subcommand). --help is always accepted.
  Flags(const std::string& command, std::vector<FlagSpec> specs, const std::vector<std::string>& args);

  bool help() const { return help_; }
  std::string usage() const;

  bool has(const std::string& name) const;
  bool declares(const std::string& name) const;  // a flag of this command (has() of another is an error)
  std::string get(const std::string& name) const;  // the value (the last, if repeated) or the default
  std::vector<std::string> get_all(const std::string& name) const;  // every value given, in order
  long long get_int(const std::string& name, long long min, long long max) const;

 private:
  const FlagSpec& spec(const std::string& name) const;

  std::string command_;
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_values_;
  bool help_ = false;
};

}  // namespace zero::cli
