// Lamb: the scalar reference against hand-checked numbers and a double-precision textbook Lamb
// (DeepSpeed's FusedLamb arrangement), then the CPU kernel bit for bit against the reference.
#include "optim/lamb.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "optim/cpu_lamb.h"

namespace zero {
namespace {

// lr 0.1, betas 0 (m = g, v = g^2), no bias correction, eps 1e-8 (below float's resolution at 1).
AdamConfig plain(float wd = 0.0f) {
  AdamConfig c;
  c.lr = 0.1f;
  c.beta1 = 0.0f;
  c.beta2 = 0.0f;
  c.eps = 1e-8f;
  c.weight_decay = wd;
  c.bias_correction = false;
  return c;
}

std::vector<float> one_step(const AdamConfig& a, const LambConfig& l, std::vector<float> p, const std::vector<float>& g,
                            bool decay = true) {
  std::vector<float> m(p.size(), 0.0f), v(p.size(), 0.0f);
  lamb_reference(lamb_step_scalars(a, l, 1), decay, p.data(), g.data(), m.data(), v.data(), p.size());
  return p;
}

// p = (3, 4), g = (1, -1): u = (1, -1), ||p|| = 5, ||u|| = sqrt 2, ratio 5 / sqrt 2 = 3.5355;
// p moves by lr * ratio * u = 0.35355 per element.
TEST(LambReference, HandCheckedStep) {
  const std::vector<float> p = one_step(plain(), {}, {3.0f, 4.0f}, {1.0f, -1.0f});
  EXPECT_NEAR(p[0], 3.0 - 0.5 / std::sqrt(2.0), 1e-6);
  EXPECT_NEAR(p[1], 4.0 + 0.5 / std::sqrt(2.0), 1e-6);
}

// The ratio is clamped to [min_coeff, max_coeff]; with a zero parameter norm it is 1.
TEST(LambReference, TrustRatioClampAndZeroNorm) {
  std::vector<float> p = one_step(plain(), {}, {300.0f, 400.0f}, {1.0f, -1.0f});  // 500 / sqrt 2 -> 10
  EXPECT_NEAR(p[0], 299.0, 1e-4);  // lr * 10 * u = 1
  EXPECT_NEAR(p[1], 401.0, 1e-4);
  p = one_step(plain(), {}, {3e-3f, 4e-3f}, {1.0f, -1.0f});  // 5e-3 / sqrt 2 -> 0.01
  EXPECT_NEAR(p[0], 3e-3 - 1e-3, 1e-8);
  EXPECT_NEAR(p[1], 4e-3 + 1e-3, 1e-8);
  p = one_step(plain(), {}, {0.0f, 0.0f}, {1.0f, -1.0f});  // ||p|| = 0: ratio 1
  EXPECT_NEAR(p[0], -0.1, 1e-7);
  EXPECT_NEAR(p[1], 0.1, 1e-7);
  LambConfig narrow;
  narrow.max_coeff = 0.3f;  // a real config's clamp (DeepSpeed's Lamb tutorial)
  p = one_step(plain(), narrow, {3.0f, 4.0f}, {1.0f, -1.0f});
  EXPECT_NEAR(p[0], 3.0 - 0.03, 1e-6);
}

// Weight decay is part of the update, before its norm: with a zero gradient u = wd * p, so the
// ratio is 1 / wd and p shrinks by exactly lr (10%) whatever wd is, unless the clamp binds.
TEST(LambReference, WeightDecayEntersTheUpdateBeforeTheNorm) {
  for (float wd : {0.5f, 0.2f, 1.0f}) {
    const std::vector<float> p = one_step(plain(wd), {}, {3.0f, 4.0f}, {0.0f, 0.0f});
    EXPECT_NEAR(p[0], 2.7, 1e-6) << wd;
    EXPECT_NEAR(p[1], 3.6, 1e-6) << wd;
  }
  // A parameter without decay (biases, norms) takes none: a zero gradient leaves it alone.
  const std::vector<float> p = one_step(plain(0.5f), {}, {3.0f, 4.0f}, {0.0f, 0.0f}, false);
  EXPECT_EQ(p[0], 3.0f);
  EXPECT_EQ(p[1], 4.0f);
}

// Bias correction rides in the step size (lr sqrt(1 - b2^t) / (1 - b1^t)), not in u. u's own scale
// cancels between the ratio and u (the step is lr ||p|| u / ||u|| times that factor), so at step 1
// with betas (0.9, 0.999) the hand-checked step shrinks by sqrt(0.001) / 0.1 = 0.316: DeepSpeed's
// arrangement, where the paper's (bias-corrected m and v inside u) would leave it unchanged.
TEST(LambReference, BiasCorrectionInTheStepSize) {
  AdamConfig c = plain();
  c.beta1 = 0.9f;
  c.beta2 = 0.999f;
  c.bias_correction = true;
  const std::vector<float> p = one_step(c, {}, {3.0f, 4.0f}, {1.0f, -1.0f});
  const double delta = 0.1 * std::sqrt(0.001) / 0.1 * 5.0 / std::sqrt(2.0);
  EXPECT_NEAR(p[0], 3.0 - delta, 1e-5);
  EXPECT_NEAR(p[1], 4.0 + delta, 1e-5);
}

TEST(LambReference, EpsInsideTheSquareRoot) {
  AdamConfig c = plain();
  c.eps = 0.21f;  // v = 1: sqrt(v + eps) = 1.1; sqrt(v) + eps = 1.21
  LambConfig inside;
  inside.eps_inside_sqrt = true;
  std::vector<float> p(2, 3.0f), g = {1.0f, 1.0f}, m(2, 0.0f), v(2, 0.0f);
  for (bool in : {false, true}) {
    inside.eps_inside_sqrt = in;
    const LambStep s = lamb_step_scalars(c, inside, 1);
    std::vector<float> mm = m, vv = v;
    const LambNorms n = lamb_moments_reference(s, false, p.data(), g.data(), mm.data(), vv.data(), 2);
    EXPECT_NEAR(n.update, 2.0 / ((in ? 1.1 : 1.21) * (in ? 1.1 : 1.21)), 1e-6) << in;
    EXPECT_NEAR(n.param, 18.0, 1e-12);
  }
}

// A textbook Lamb in double, DeepSpeed's arrangement, several steps on a tensor larger than a sum block.
TEST(LambReference, AgainstTextbookInDouble) {
  for (bool bias_correction : {true, false}) {
    for (bool decay : {true, false}) {
      AdamConfig c;
      c.lr = 1e-2f;
      c.weight_decay = 0.1f;
      c.bias_correction = bias_correction;
      const LambConfig l;
      const std::size_t n = 5000;
      std::vector<float> p(n), m(n, 0.0f), v(n, 0.0f), g(n);
      std::vector<double> dp(n), dm(n, 0.0), dv(n, 0.0);
      for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<float>(dp[i] = std::sin(0.37 * i) * 0.05);
      double worst = 0;
      for (int t = 1; t <= 5; ++t) {
        for (std::size_t i = 0; i < n; ++i) g[i] = static_cast<float>(std::cos(0.11 * i * t) + 0.01 * t);
        lamb_reference(lamb_step_scalars(c, l, t), decay, p.data(), g.data(), m.data(), v.data(), n);
        const double wd = decay ? c.weight_decay : 0.0;
        double w2 = 0, u2 = 0;
        std::vector<double> u(n);
        for (std::size_t i = 0; i < n; ++i) {
          dm[i] = c.beta1 * dm[i] + (1 - c.beta1) * g[i];
          dv[i] = c.beta2 * dv[i] + (1 - c.beta2) * g[i] * g[i];
          u[i] = dm[i] / (std::sqrt(dv[i]) + c.eps) + wd * dp[i];
          w2 += dp[i] * dp[i];
          u2 += u[i] * u[i];
        }
        const double step = bias_correction ? c.lr * std::sqrt(1 - std::pow(c.beta2, t)) / (1 - std::pow(c.beta1, t)) : c.lr;
        const double ratio = std::clamp(std::sqrt(w2) / std::sqrt(u2), 0.01, 10.0);
        for (std::size_t i = 0; i < n; ++i) {
          dp[i] -= step * ratio * u[i];
          worst = std::max(worst, std::fabs(dp[i] - p[i]) / std::max(1e-3, std::fabs(dp[i])));
        }
      }
      EXPECT_LT(worst, 1e-5) << "bias_correction " << bias_correction << " decay " << decay;
      std::printf("[ measured ] Lamb reference vs double textbook, 5 steps of 5000 elements: max relative difference %.3g\n", worst);
    }
  }
}

TEST(LambReference, BadValuesAreConfigErrors) {
  LambConfig l;
  l.max_coeff = 0.0f;
  EXPECT_THROW(lamb_step_scalars(AdamConfig{}, l, 1), ConfigError);
  l = {};
  l.min_coeff = 11.0f;
  EXPECT_THROW(lamb_step_scalars(AdamConfig{}, l, 1), ConfigError);
  l = {};
  l.min_coeff = -1.0f;
  EXPECT_THROW(lamb_step_scalars(AdamConfig{}, l, 1), ConfigError);
  AdamConfig a;
  a.beta1 = 1.0f;
  EXPECT_THROW(lamb_step_scalars(a, {}, 1), ConfigError);
}

// ---- the CPU kernel against the reference, bit for bit ----

float value(std::size_t i, int salt) { return static_cast<float>(std::sin(0.7 * i + salt) * (1.0 + (i % 13))); }

// (Length 0 compares nothing: an empty vector's data() may be null, which memcmp may not be given.)
bool same(const void* a, const void* b, std::size_t bytes) { return bytes == 0 || std::memcmp(a, b, bytes) == 0; }

TEST(CpuLamb, BitIdenticalToTheReferenceAnyLengthAndThreads) {
  AdamConfig c;
  c.lr = 3e-3f;
  c.weight_decay = 0.01f;
  LambConfig l;
  for (std::size_t n : {0, 1, 7, 2047, 2048, 2049, 6143, 20001}) {
    for (int threads : {1, 2, 3, 4}) {
      for (bool decay : {true, false}) {
        for (bool inside : {false, true}) {
          l.eps_inside_sqrt = inside;
          std::vector<float> p(n), g(n), m(n), v(n);
          for (std::size_t i = 0; i < n; ++i) {
            p[i] = value(i, 1);
            g[i] = value(i, 2);
            m[i] = value(i, 3) * 0.1f;
            v[i] = std::fabs(value(i, 4));
          }
          const LambStep s = lamb_step_scalars(c, l, 3);
          std::vector<float> rp = p, rm = m, rv = v, kp = p, km = m, kv = v;
          const LambNorms want = lamb_moments_reference(s, decay, rp.data(), g.data(), rm.data(), rv.data(), n);
          LambNorms got;
          lamb_moments(s, decay, kp, g, km, kv, got, {threads});
          const std::string what = cat("n=", n, " threads=", threads, " decay=", decay, " inside=", inside);
          EXPECT_TRUE(same(&want, &got, sizeof want)) << what << ": sums " << want.param << "," << want.update << " vs " << got.param
                                                      << "," << got.update;
          EXPECT_TRUE(same(rm.data(), km.data(), n * 4) && same(rv.data(), kv.data(), n * 4)) << what;
          const float coef = lamb_coefficient(s, want);
          lamb_update_reference(s, decay, coef, rp.data(), rm.data(), rv.data(), n);
          std::vector<std::uint16_t> copy(n);
          lamb_update(s, decay, coef, kp, km, kv, copy, HalfFormat::kBf16, {threads});
          EXPECT_TRUE(same(rp.data(), kp.data(), n * 4)) << what;
          bool copy_ok = true;
          for (std::size_t i = 0; i < n; ++i) copy_ok = copy_ok && copy[i] == float_to_bf16(rp[i]);
          EXPECT_TRUE(copy_ok) << what;
        }
      }
    }
  }
}

// A run fed in pieces of whole sum blocks (how 16-bit gradients are widened) gives the whole run's sums.
TEST(CpuLamb, PiecesOfWholeBlocksGiveTheRunsSums) {
  const std::size_t n = 3 * kLambSumBlock + 5;
  std::vector<float> p(n), g(n), m(n, 0.0f), v(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = value(i, 5);
    g[i] = value(i, 6);
  }
  const LambStep s = lamb_step_scalars(AdamConfig{}, {}, 1);
  std::vector<float> m1 = m, v1 = v;
  const LambNorms whole = lamb_moments_reference(s, true, p.data(), g.data(), m1.data(), v1.data(), n);
  LambNorms pieces;
  for (std::size_t o = 0; o < n; o += 2 * kLambSumBlock) {
    const std::size_t len = std::min(2 * kLambSumBlock, n - o);
    lamb_moments(s, true, {p.data() + o, len}, {g.data() + o, len}, {m.data() + o, len}, {v.data() + o, len}, pieces);
  }
  EXPECT_TRUE(same(&whole, &pieces, sizeof whole));
  EXPECT_TRUE(same(m.data(), m1.data(), n * 4));
}

TEST(CpuLamb, MismatchedLengthsAreConfigErrors) {
  std::vector<float> a(4), b(3);
  LambNorms acc;
  const LambStep s = lamb_step_scalars(AdamConfig{}, {}, 1);
  EXPECT_THROW(lamb_moments(s, true, a, b, a, a, acc), ConfigError);
  EXPECT_THROW(lamb_update(s, true, 0.1f, a, b, a), ConfigError);
}

}  // namespace
}  // namespace zero
