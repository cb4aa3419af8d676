// Inputs and plain references shared by the communicator tests (threads and MPI).
//
// The inputs are chosen so that summation order shows: values span many binades and both signs,
// so ((x0 + x1) + x2) + x3 and any other order (reversed, or the pairwise tree an MPI reduction
// might use) differ in the last bits for most elements. A backend that adds in another order
// fails the bit-equality checks instead of passing by luck.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace zero::testing {

// Deterministic, rank- and index-dependent value: ±(1 + m) * 2^e with e in [-12, 12].
inline float input_value(int rank, std::size_t i, int salt) {
  std::uint64_t z = (static_cast<std::uint64_t>(salt) << 48) ^ (static_cast<std::uint64_t>(rank) << 32) ^ i;
  z += 0x9e3779b97f4a7c15ull;  // splitmix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  const float mantissa = 1.0f + static_cast<float>(z & 0xffffff) / 16777216.0f;
  const int exponent = static_cast<int>((z >> 24) % 25) - 12;
  const float sign = (z >> 40) & 1 ? -1.0f : 1.0f;
  return sign * std::ldexp(mantissa, exponent);
}

// (n) f32: what `rank` contributes to a collective.
inline std::vector<float> rank_input(int rank, std::size_t n, int salt) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = input_value(rank, i, salt);
  return v;
}

// (n) f32: out[i] = ((x_0[i] + x_1[i]) + x_2[i]) + ... in rank order, the documented semantics.
inline std::vector<float> sum_in_rank_order(int world, std::size_t n, int salt) {
  std::vector<float> out = rank_input(0, n, salt);
  for (int r = 1; r < world; ++r) {
    const std::vector<float> x = rank_input(r, n, salt);
    for (std::size_t i = 0; i < n; ++i) out[i] += x[i];
  }
  return out;
}

// (n) f32: the same sum in reverse rank order, to show the inputs tell orders apart.
inline std::vector<float> sum_in_reverse_order(int world, std::size_t n, int salt) {
  std::vector<float> out = rank_input(world - 1, n, salt);
  for (int r = world - 2; r >= 0; --r) {
    const std::vector<float> x = rank_input(r, n, salt);
    for (std::size_t i = 0; i < n; ++i) out[i] += x[i];
  }
  return out;
}

inline std::size_t count_bit_differences(std::span<const float> a, std::span<const float> b) {
  std::size_t diff = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) ++diff;
  return diff;
}

// Bit equality, reported as the first differing element and the number of differences.
inline ::testing::AssertionResult bits_equal(std::span<const float> actual, std::span<const float> expected) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " != " << expected.size();
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (std::bit_cast<std::uint32_t>(actual[i]) != std::bit_cast<std::uint32_t>(expected[i])) {
      return ::testing::AssertionFailure()
             << count_bit_differences(actual, expected) << " of " << actual.size()
             << " elements differ; first at " << i << ": " << actual[i] << " (0x" << std::hex
             << std::bit_cast<std::uint32_t>(actual[i]) << ") != " << expected[i] << " (0x"
             << std::bit_cast<std::uint32_t>(expected[i]) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

inline std::span<const float> slot(const std::vector<float>& v, int r, std::size_t k) {
  return std::span<const float>(v).subspan(static_cast<std::size_t>(r) * k, k);
}

}  // namespace zero::testing
