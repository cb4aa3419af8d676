#include "common/number_text.h"

#include <charconv>
#include <cstdlib>

#include "common/error.h"

namespace zero {
namespace {

std::size_t digits_at(std::string_view s, std::size_t at) {
  std::size_t n = 0;
  while (at + n < s.size() && s[at + n] >= '0' && s[at + n] <= '9') ++n;
  return n;
}

}  // namespace

std::size_t decimal_length(std::string_view s) {
  std::size_t at = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  const std::size_t whole = digits_at(s, at);
  at += whole;
  std::size_t fraction = 0;
  if (at < s.size() && s[at] == '.') {
    fraction = digits_at(s, at + 1);
    if (whole == 0 && fraction == 0) return 0;  // "." alone
    at += 1 + fraction;
  }
  if (whole == 0 && fraction == 0) return 0;
  if (at < s.size() && (s[at] == 'e' || s[at] == 'E')) {
    std::size_t e = at + 1;
    if (e < s.size() && (s[e] == '+' || s[e] == '-')) ++e;
    const std::size_t exponent = digits_at(s, e);
    if (exponent > 0) at = e + exponent;  // "5e" is the number 5 followed by "e"
  }
  return at;
}

std::optional<long double> parse_decimal(std::string_view text) {
  if (text.empty() || decimal_length(text) != text.size()) return std::nullopt;
  const std::string copy(text);  // strtold needs the terminating NUL; it saturates instead of throwing
  return std::strtold(copy.c_str(), nullptr);
}

std::string quote_input(std::string_view text) {
  if (text.size() <= 40) return cat("'", text, "'");
  return cat("'", text.substr(0, 40), "...' (", text.size(), " characters)");
}

std::string shortest_decimal(double x) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  return ec == std::errc() ? std::string(buf, end) : cat(x);
}

}  // namespace zero
