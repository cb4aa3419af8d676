#include "cli/flags.h"

#include <algorithm>
#include <charconv>

#include "common/error.h"
#include "common/number_text.h"

namespace zero::cli {

Flags::Flags(const std::string& command, std::vector<FlagSpec> specs, const std::vector<std::string>& args)
    : command_(command), specs_(std::move(specs)) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      help_ = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) throw ConfigError(cat("[cli] unexpected argument '", a, "' for ", command_, "; see ", command_, " --help"));
    std::string name = a.substr(2), value;
    const auto eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const FlagSpec& s = spec(name);
    if (s.takes_value && !inline_value) {
      if (i + 1 >= args.size()) throw ConfigError(cat("[cli] --", name, " needs a value; see ", command_, " --help"));
      value = args[++i];
    } else if (!s.takes_value && inline_value) {
      throw ConfigError(cat("[cli] --", name, " takes no value"));
    }
    // An empty value is never "not given": `--data ''` from an unset shell variable must not fall
    // back to the default file, nor `--metrics ''` silently write nothing.
    if (s.takes_value && value.empty()) {
      throw ConfigError(cat("[cli] --", name, " is given an empty value: give it one or leave the flag out; see ", command_, " --help"));
    }
    values_[name] = s.takes_value ? value : "1";
    all_values_[name].push_back(values_[name]);
  }
}

const FlagSpec& Flags::spec(const std::string& name) const {
  auto it = std::find_if(specs_.begin(), specs_.end(), [&](const FlagSpec& s) { return s.name == name; });
  if (it == specs_.end()) throw ConfigError(cat("[cli] unknown flag --", name, " for ", command_, "; see ", command_, " --help"));
  return *it;
}

bool Flags::declares(const std::string& name) const {
  return std::any_of(specs_.begin(), specs_.end(), [&](const FlagSpec& s) { return s.name == name; });
}

bool Flags::has(const std::string& name) const {
  spec(name);
  return values_.count(name) > 0;
}

std::string Flags::get(const std::string& name) const {
  const FlagSpec& s = spec(name);
  auto it = values_.find(name);
  return it == values_.end() ? s.default_value : it->second;
}

std::vector<std::string> Flags::get_all(const std::string& name) const {
  spec(name);
  auto it = all_values_.find(name);
  return it == all_values_.end() ? std::vector<std::string>{} : it->second;
}

long long Flags::get_int(const std::string& name, long long min, long long max) const {
  const std::string v = get(name);
  long long x = 0;
  const char* end = v.data() + v.size();
  const char* first = !v.empty() && v[0] == '+' ? v.data() + 1 : v.data();  // from_chars takes no '+'
  const auto [stop, ec] = std::from_chars(first, end, x);
  if (first == end || stop != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    throw ConfigError(cat("[cli] --", name, " must be an integer, not ", quote_input(v)));
  }
  if (ec == std::errc::result_out_of_range || x < min || x > max) {
    throw ConfigError(cat("[cli] --", name, " must be between ", min, " and ", max, ", not ", quote_input(v)));
  }
  return x;
}

std::string Flags::usage() const {
  std::string out = cat("usage: ", command_, " [flags]\n\nflags:\n");
  for (const auto& s : specs_) {
    std::string left = "  --" + s.name + (s.takes_value ? " VALUE" : "");
    left.resize(std::max<std::size_t>(left.size() + 2, 26), ' ');
    out += left + s.help + (s.default_value.empty() ? "" : " (default: " + s.default_value + ")") + "\n";
  }
  out += "  --help                  this text\n";
  return out;
}

}  // namespace zero::cli
