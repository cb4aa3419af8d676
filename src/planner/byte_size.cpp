#include "planner/byte_size.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <regex>

#include "common/error.h"

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

long double parse_amount(const std::string& text, const std::string& what, bool rate) {
  // std::regex matches recursively: a number tens of thousands of digits long would overflow the
  // stack. No size needs more than a few dozen characters.
  constexpr std::size_t kMaxLength = 64;
  if (text.size() > kMaxLength) {
    throw ConfigError(cat("[planner] ", what, " is ", text.size(), " characters long ('", text.substr(0, 20), "...'); ",
                          syntax_help(rate)));
  }
  static const std::regex kSyntax(R"(^\s*([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?) ?([A-Za-z]*)(/s)?\s*$)");
  std::smatch m;
  const bool matched = std::regex_match(text, m, kSyntax);
  const std::string unit = matched ? lower(m[2].str()) : "";
  if (!matched || (m[3].matched && !rate) || unit_bytes(unit) == 0) {
    std::string hint;
    if (matched && (unit == "k" || unit == "m" || unit == "g" || unit == "t")) {
      hint = cat(" ('", m[2].str(), "' alone is ambiguous: say ", m[2].str(), "B or ", m[2].str(), "iB)");
    }
    throw ConfigError(cat("[planner] cannot read '", text, "' as a ", rate ? "bandwidth" : "memory size", " for ", what,
                          hint, ": ", syntax_help(rate)));
  }
  errno = 0;
  long double number = std::strtold(m[1].str().c_str(), nullptr);  // never throws, unlike std::stold
  if (errno == ERANGE && std::isinf(number)) {
    throw ConfigError(cat("[planner] ", what, " '", text, "' is beyond 2^64 bytes", rate ? " per second" : ""));
  }
  if (errno == ERANGE) number = 0;  // an underflow: less than a byte, refused below
  const long double value = number * unit_bytes(unit);
  if (!(value >= 1)) {
    throw ConfigError(cat("[planner] ", what, " must be positive (at least one byte", rate ? " per second" : "",
                          "), not '", text, "'"));
  }
  return value;
}

}  // namespace

std::uint64_t parse_byte_size(const std::string& text, const std::string& what) {
  const long double v = parse_amount(text, what, false);
  if (v >= 18446744073709551616.0L) throw ConfigError(cat("[planner] ", what, " '", text, "' is beyond 2^64 bytes"));
  return static_cast<std::uint64_t>(v);
}

double parse_bandwidth(const std::string& text, const std::string& what) {
  const long double v = parse_amount(text, what, true);
  if (v >= 1e300L) throw ConfigError(cat("[planner] ", what, " '", text, "' is beyond any link (more than 1e300 bytes per second)"));
  return static_cast<double>(v);
}

}  // namespace zero
