// The algorithm behind the cuda device's sum_squares (device/exact_sum.h), run on the CPU: the
// run effects, applied in order with the term-by-term fallback, give the sequential double loop's
// bits (host_ops::sum_squares, the contract) on inputs drawn to hit ties, binade crossings,
// tiny and huge sums, infinities and NaNs, for run lengths from 1 up.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "device/exact_sum.h"
#include "common/error.h"
#include "device/host_ops.h"

namespace zero {
namespace {

// The GPU's four passes, sequentially: any-order run sums, predicted binades, run effects
// (combined in a tree, as the GPU's shared-memory reduction does), then the ordered apply.
double by_runs(const std::vector<float>& x, double acc, std::size_t run) {
  const std::size_t n = x.size(), runs = (n + run - 1) / run;
  auto sq = [&](std::size_t i) { return static_cast<double>(x[i]) * x[i]; };
  std::vector<int> binade(runs);
  double start = acc;
  for (std::size_t r = 0; r < runs; ++r) {
    binade[r] = exact_sum::binade_of(start);
    double s = 0.0;
    for (std::size_t i = std::min(n, r * run + run); i-- > r * run;) s += sq(i);  // another order on purpose
    start += s;
  }
  double a = acc;
  for (std::size_t r = 0; r < runs; ++r) {
    std::vector<exact_sum::Effect> parts;
    for (std::size_t i = r * run; i < std::min(n, r * run + run); ++i) parts.push_back(exact_sum::term(sq(i), binade[r]));
    for (std::size_t w = 1; w < parts.size(); w *= 2)
      for (std::size_t t = 0; t + w < parts.size(); t += 2 * w) parts[t] = exact_sum::then(parts[t], parts[t + w]);
    if (binade[r] != exact_sum::kNoBinade && !parts.empty() && exact_sum::apply(&a, binade[r], parts[0])) continue;
    for (std::size_t i = r * run; i < std::min(n, r * run + run); ++i) a += sq(i);
  }
  return a;
}

double sequential(const std::vector<float>& x, double acc) {
  return host_ops::sum_squares({const_cast<float*>(x.data()), x.size(), Dtype::kF32}, acc);
}

void expect_same(const std::vector<float>& x, double acc, const std::string& what) {
  for (std::size_t run : {1, 3, 64, 1000, 8192}) {
    const double want = sequential(x, acc), got = by_runs(x, acc, run);
    if (std::isnan(want) && std::isnan(got)) continue;
    ASSERT_EQ(std::memcmp(&want, &got, sizeof(double)), 0) << what << " run=" << run << ": " << want << " vs " << got;
  }
}

TEST(ExactSum, RunEffectsGiveTheSequentialSum) {
  std::mt19937_64 rng(11);
  std::normal_distribution<float> z(0.0f, 1.0f);
  std::uniform_real_distribution<float> e(-30.0f, 30.0f);
  for (std::size_t n : {0, 1, 2, 5, 100, 4097, 50000}) {
    for (double acc : {0.0, 1e-310, 1e-250, 1.0, 3.0e10, 1e290}) {
      std::vector<float> x(n);
      for (auto& v : x) v = z(rng);
      expect_same(x, acc, cat("normal n=", n, " acc=", acc));
      for (auto& v : x) v = z(rng) * std::exp2(e(rng));
      expect_same(x, acc, cat("wide n=", n, " acc=", acc));
    }
  }
}

TEST(ExactSum, TiesRoundToEvenAsTheSequentialLoopDoes) {
  // acc = 2^52 (u = 1) and terms of 0.25 (0.5^2): every pair of terms makes a tie at some point,
  // and which way each goes depends on the running sum's parity.
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> pick(0, 4);
  const float vals[] = {0.5f, 0.70710677f, 1.0f, 1.2247449f, 1.5f};  // squares near 0.25, 0.5, 1, 1.5, 2.25
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> x(3000 + static_cast<std::size_t>(trial));
    for (auto& v : x) v = vals[pick(rng)];
    expect_same(x, std::ldexp(1.0, 52), cat("ties trial ", trial));
    expect_same(x, std::ldexp(1.0, 53) - 2.0, cat("ties across a binade, trial ", trial));
    expect_same(x, std::ldexp(3.0, 51) + 1.0, cat("odd start, trial ", trial));
  }
}

TEST(ExactSum, InfinitiesAndNansFallBackToTheLoop) {
  std::vector<float> x(20000, 1.5f);
  x[777] = std::numeric_limits<float>::infinity();
  expect_same(x, 0.0, "an infinity");
  x[777] = std::numeric_limits<float>::quiet_NaN();
  expect_same(x, 0.0, "a NaN");
  x[777] = std::numeric_limits<float>::max();
  expect_same(x, 1e300, "past double's range");
}

}  // namespace
}  // namespace zero
