// Internal to optim: Lamb's per-element arithmetic (optim/lamb.h), written once and shared by the
// scalar reference and the CPU kernel, so both perform the same operations in the same order.
#pragma once

#include <cmath>
#include <cstddef>

#include "optim/lamb.h"

namespace zero::lamb_body {

// The new moments of one element, in place.
inline void moments(const LambStep& s, float g, float& m, float& v) {
  m = std::fma(s.beta1, m, s.one_minus_beta1 * g);
  v = std::fma(s.beta2, v, (s.one_minus_beta2 * g) * g);
}

// The update u of one element from its parameter and its new moments.
inline float update(const LambStep& s, float wd, float p, float m, float v) {
  const float denom = s.eps_inside_sqrt ? std::sqrt(v + s.eps) : std::sqrt(v) + s.eps;
  return std::fma(wd, p, m / denom);
}

// Phase 1 over one block of at most kLambSumBlock elements: its sums, each from 0, left to right.
inline LambNorms moments_block(const LambStep& s, float wd, const float* p, const float* g, float* m, float* v, std::size_t n) {
  LambNorms b;
  for (std::size_t i = 0; i < n; ++i) {
    moments(s, g[i], m[i], v[i]);
    const float u = update(s, wd, p[i], m[i], v[i]);
    b.param += static_cast<double>(p[i]) * p[i];
    b.update += static_cast<double>(u) * u;
  }
  return b;
}

inline void add(LambNorms& acc, const LambNorms& b) {
  acc.param += b.param;
  acc.update += b.update;
}

}  // namespace zero::lamb_body
