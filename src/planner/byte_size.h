// Memory sizes and bandwidths as people write them on a command line.
//
//   parse_byte_size("80GB", "--device-memory")   == 80'000'000'000   (GB = 10^9 bytes)
//   parse_byte_size("80GiB", "--device-memory")  == 85'899'345'920   (GiB = 2^30 bytes)
//   parse_byte_size("8e10", "--device-memory")   == 80'000'000'000   (bytes)
//   parse_bandwidth("25GB/s", "--link-bandwidth") == 25e9             (bytes per second)
//
// A number (digits, an optional fraction, an optional exponent), then optionally a unit: B, KB,
// MB, GB, TB, PB (powers of 10) or KiB, MiB, GiB, TiB, PiB (powers of 2), any letter case, with
// or without one space between. Bare K/M/G/T are refused as ambiguous. ConfigError naming `what`
// for anything else ("80 gigs"), for zero or a negative size, and for a size above 2^64 bytes.
#pragma once

#include <cstdint>
#include <string>

namespace zero {

std::uint64_t parse_byte_size(const std::string& text, const std::string& what);
// The same syntax with an optional "/s": bytes per second.
double parse_bandwidth(const std::string& text, const std::string& what);

}  // namespace zero
