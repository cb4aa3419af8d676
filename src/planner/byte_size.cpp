#include "planner/byte_size.h"

#include <cctype>
#include <cmath>
#include <string_view>

#include "common/error.h"
#include "common/number_text.h"

namespace zero {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Bytes in one `unit` (lower case), or 0 if it is not a unit.
long double unit_bytes(const std::string& unit) {
  static const char* const kDecimal[] = {"b", "kb", "mb", "gb", "tb", "pb"};
  static const char* const kBinary[] = {"", "kib", "mib", "gib", "tib", "pib"};
  if (unit.empty()) return 1;
  for (int i = 0; i < 6; ++i) {
    if (unit == kDecimal[i]) return std::pow(1000.0L, i);
    if (i > 0 && unit == kBinary[i]) return std::pow(1024.0L, i);
  }
  return 0;
}

std::string syntax_help(bool rate) {
  const char* s = rate ? "/s" : "";
  return cat("write a number with an optional unit: 80GB", s, " (GB = 10^9 bytes), 80GiB", s,
             " (GiB = 2^30 bytes), or 8e10", rate ? " (bytes per second)" : " (bytes)");
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

bool all_letters(std::string_view s) {
  for (char c : s)
    if (!std::isalpha(static_cast<unsigned char>(c))) return false;
  return true;
}

// A number, one optional space, an optional unit of letters, an optional "/s", with spaces
// around: scanned by hand (a regex recursed once per digit and overflowed the stack on a long
// number; std::stold threw std::out_of_range on 1e99999). The value may be +inf.
long double parse_amount(const std::string& text, const std::string& what, bool rate) {
  std::string_view s = text;
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  const std::size_t length = decimal_length(s);
  std::string_view rest = s.substr(length);
  if (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const bool per_second = rest.size() >= 2 && rest.substr(rest.size() - 2) == "/s";
  if (per_second) rest.remove_suffix(2);
  const std::string unit = lower(std::string(rest));
  if (length == 0 || !all_letters(rest) || (per_second && !rate) || unit_bytes(unit) == 0) {
    std::string hint;
    if (length > 0 && (unit == "k" || unit == "m" || unit == "g" || unit == "t")) {
      hint = cat(" ('", rest, "' alone is ambiguous: say ", rest, "B or ", rest, "iB)");
    }
    throw ConfigError(cat("[planner] cannot read ", quote_input(text), " as a ", rate ? "bandwidth" : "memory size", " for ",
                          what, hint, ": ", syntax_help(rate)));
  }
  const long double value = *parse_decimal(s.substr(0, length)) * unit_bytes(unit);
  if (!(value >= 1)) {
    throw ConfigError(cat("[planner] ", what, " must be positive (at least one byte", rate ? " per second" : "",
                          "), not ", quote_input(text)));
  }
  return value;
}

}  // namespace

std::uint64_t parse_byte_size(const std::string& text, const std::string& what) {
  const long double v = parse_amount(text, what, false);
  if (v >= 18446744073709551616.0L) throw ConfigError(cat("[planner] ", what, " ", quote_input(text), " is beyond 2^64 bytes"));
  return static_cast<std::uint64_t>(v);
}

double parse_bandwidth(const std::string& text, const std::string& what) {
  const long double v = parse_amount(text, what, true);
  if (v > 1e30L) throw ConfigError(cat("[planner] ", what, " ", quote_input(text), " is beyond 10^30 bytes per second"));
  return static_cast<double>(v);
}

}  // namespace zero
