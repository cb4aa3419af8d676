// The sequential sum of squares, in parallel, with the sequential sum's bits.
//
// The seam's sum_squares is acc + x[0]^2 + x[1]^2 + ... in double, added left to right (the CPU
// devices' loop, which is the contract). Each term y = double(x)^2 is exact (24-bit mantissas
// squared fit in 53 bits), and y >= 0, so the running sum never decreases. While it stays in one
// binade [2^e, 2^(e+1)) it is a = k * u with u = 2^(e-52) and k an integer in [2^52, 2^53), and
// adding y with round-to-nearest-even gives k + m + c, where y = (m + f) * u (m whole, 0 <= f < 1)
// and c = 1 if f > 1/2, 0 if f < 1/2, and on a tie 1 exactly when k + m is odd. So a run of terms
// acts on k as "add inc[k & 1]": the increment depends on k only through its parity. These
// effects compose exactly (integer adds), in any grouping, so a GPU computes each run's effect
// in parallel and one thread applies them in order: the result is the sequential sum, bit for
// bit, by construction, not within a tolerance.
//
// Where a run's binade is not known in advance, the effect is computed for a predicted binade (the
// binade of an approximate prefix sum) and checked when applied: the running sum must start in
// that binade and end below its top. A run that fails the check (a binade crossing, an infinity
// or NaN, a sum near zero or near overflow) is added term by term, as the CPU does. A wrong
// prediction costs time, never bits. NaN payloads are the one thing left open (IEEE leaves them).
//
// The functions are plain arithmetic on doubles and int64, compiled for the host (the CPU test
// checks this algorithm against the CPU loop) and for the GPU (cuda_sum.cu).
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define ZERO_HD __host__ __device__
#else
#define ZERO_HD
#endif

namespace zero::exact_sum {

inline constexpr std::int64_t kCap = std::int64_t{1} << 53;  // k's bound: reaching it leaves the binade
inline constexpr int kNoBinade = -100000;                      // "no prediction": the run is added term by term
inline constexpr int kLowest = -1000, kHighest = 1000;        // binades the fast path takes (normal, no overflow)

// What a run does to k: k += inc[k & 1]; inc saturates at kCap (the run leaves the binade).
// (Trivial, so that a GPU's __shared__ array of them needs no constructor.)
struct Effect {
  std::int64_t inc[2];
};

ZERO_HD inline Effect identity() { return {{0, 0}}; }

ZERO_HD inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {  // a, b in [0, kCap]
  const std::int64_t s = a + b;
  return s > kCap ? kCap : s;
}

// `first` then `second`.
ZERO_HD inline Effect then(const Effect& first, const Effect& second) {
  Effect r = identity();
  for (int p = 0; p < 2; ++p) {
    const std::int64_t a = first.inc[p];
    r.inc[p] = saturating_add(a, second.inc[(p + static_cast<int>(a & 1)) & 1]);
  }
  return r;
}

// The effect of adding y (an exact square, >= 0) in binade e.
ZERO_HD inline Effect term(double y, int e) {
  const double q = std::ldexp(y, 52 - e);  // y / u, exact (a power-of-two scaling; tiny q: f < 1/2 anyway)
  Effect r = identity();
  if (!(q < static_cast<double>(kCap))) {  // too large for the binade, an infinity or a NaN
    r.inc[0] = r.inc[1] = kCap;
    return r;
  }
  const double m = std::floor(q);
  const double f = q - m;  // exact
  const auto whole = static_cast<std::int64_t>(m);
  for (int p = 0; p < 2; ++p) {
    const std::int64_t c = f > 0.5 ? 1 : (f == 0.5 ? ((p + whole) & 1) : 0);
    r.inc[p] = whole + c;
  }
  return r;
}

// The binade the fast path uses for a run predicted to start at `start`, or kNoBinade.
ZERO_HD inline int binade_of(double start) {
  if (!(start >= std::ldexp(1.0, kLowest) && start < std::ldexp(1.0, kHighest))) return kNoBinade;
  return std::ilogb(start);
}

// Applies a run's effect, computed for binade e, to the running sum *a. False (and *a unchanged)
// when *a is not in binade e or the run would leave it: the caller adds that run term by term.
ZERO_HD inline bool apply(double* a, int e, const Effect& effect) {
  if (e == kNoBinade || binade_of(*a) != e) return false;
  const auto k = static_cast<std::int64_t>(std::ldexp(*a, 52 - e));  // exact: *a is k * 2^(e-52)
  const std::int64_t next = k + effect.inc[k & 1];
  if (next >= kCap) return false;
  *a = std::ldexp(static_cast<double>(next), e - 52);
  return true;
}

}  // namespace zero::exact_sum
