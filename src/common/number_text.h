// Decimal numbers as people type them on a command line (80, 7e9, .5, 1.5E-3), read without
// std::regex, whose recursion overflows the stack on a long input, and without exceptions, since
// std::stold throws std::out_of_range for 1e99999.
//
//   number = [+-]? ( digits [ "." digits? ] | "." digits ) ( [eE] [+-]? digits )?
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace zero {

// The length of the longest number at the start of `text` (0: none).
std::size_t decimal_length(std::string_view text);

// The value of `text` if the whole of it is one number; an out-of-range value saturates (+-inf
// beyond the long double range, 0 below it).
std::optional<long double> parse_decimal(std::string_view text);

// The shortest decimal text that reads back as `x` (0.9999999999, not the stream's "1"), for
// messages that must show the number a user wrote.
std::string shortest_decimal(double x);

// `text` for quoting in a message: as it is, or its first 40 characters and its length when longer.
std::string quote_input(std::string_view text);

}  // namespace zero
