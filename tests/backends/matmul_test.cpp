// The CPU's matrix products (backends/cpu/matmul.h) against plain loops written here: the f32
// products (OpenBLAS, oneDNN) against a double reference, oneDNN's bf16 products against the
// same sums in f32 over operands rounded to bf16 here (and, given in bf16, against themselves
// given in f32: the same bits), over a sweep of shapes (tiny, odd, the
// GPT's), all four transposes, padded leading dimensions, alpha and beta. Each reports its
// largest difference relative to the size of the terms summed, sum_k |alpha a_ik b_kj| +
// |beta c_ij|, which bounds what a reordered sum can change.
#include "backends/cpu/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "partition/init.h"

namespace zero {
namespace {

struct Case {
  int M, N, K;
  bool ta, tb;
  int pad;  // extra elements per stored row beyond the dense leading dimension
  float alpha, beta;
};

std::string describe(const Case& c) {
  return cat("M=", c.M, " N=", c.N, " K=", c.K, " ", c.ta ? "T" : "N", c.tb ? "T" : "N", " pad=", c.pad, " alpha=", c.alpha,
             " beta=", c.beta);
}

std::vector<float> random_vector(std::size_t n, std::uint64_t key) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(counter_uniform(key, i) * 2 - 1);
  return v;
}

// A case's operands and c, as stored (row-major, padded), and the result of `kind` on them.
struct Run {
  int lda, ldb, ldc;
  std::vector<float> a, b, c0, c;
  explicit Run(const Case& k, std::uint64_t seed) {
    const int a_rows = k.ta ? k.K : k.M, a_cols = k.ta ? k.M : k.K;
    const int b_rows = k.tb ? k.N : k.K, b_cols = k.tb ? k.K : k.N;
    lda = a_cols + k.pad, ldb = b_cols + k.pad, ldc = k.N + k.pad;
    a = random_vector(static_cast<std::size_t>(a_rows) * lda, seed);
    b = random_vector(static_cast<std::size_t>(b_rows) * ldb, seed + 1);
    c0 = random_vector(static_cast<std::size_t>(k.M) * ldc, seed + 2);
    if (k.beta == 0.0f) std::fill(c0.begin(), c0.end(), NAN);  // beta 0: c must not be read
  }
  float op_a(const Case& k, int i, int p) const { return k.ta ? a[static_cast<std::size_t>(p) * lda + i] : a[static_cast<std::size_t>(i) * lda + p]; }
  float op_b(const Case& k, int p, int j) const { return k.tb ? b[static_cast<std::size_t>(j) * ldb + p] : b[static_cast<std::size_t>(p) * ldb + j]; }
  void compute(Matmul& mm, const Case& k) {
    c = c0;
    mm.run(k.M, k.N, k.K, k.alpha, {a.data(), lda, k.ta}, {b.data(), ldb, k.tb}, k.beta, c.data(), ldc);
  }
};

float to_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }

// Largest |got - ref| / scale over c's elements; the padding between rows must be untouched.
// bf16: the reference rounds the operands to bf16 and sums in f32, k in order; otherwise in double.
double max_scaled_difference(const Run& r, const Case& k, bool bf16) {
  double worst = 0;
  for (int i = 0; i < k.M; ++i) {
    for (int j = 0; j < k.N; ++j) {
      double ref = 0, scale = 0;
      float ref32 = 0;
      for (int p = 0; p < k.K; ++p) {
        const float x = bf16 ? to_bf16(r.op_a(k, i, p)) : r.op_a(k, i, p), y = bf16 ? to_bf16(r.op_b(k, p, j)) : r.op_b(k, p, j);
        ref += static_cast<double>(x) * y;
        ref32 += x * y;  // exact products (bf16 x bf16 fits f32), summed in f32
        scale += std::abs(static_cast<double>(x) * y);
      }
      const std::size_t at = static_cast<std::size_t>(i) * r.ldc + j;
      const double before = k.beta == 0.0f ? 0.0 : static_cast<double>(k.beta) * r.c0[at];
      const double expect = static_cast<double>(k.alpha) * (bf16 ? ref32 : ref) + before;
      const double denom = std::abs(static_cast<double>(k.alpha)) * scale + std::abs(before);
      const double diff = std::abs(r.c[at] - expect);
      if (!(diff <= diff)) return INFINITY;  // NaN: c was read where beta is 0, or a wrong element
      worst = std::max(worst, denom > 0 ? diff / denom : diff);
    }
    for (int j = k.N; j < r.ldc; ++j) {  // the padding is not c's
      const std::size_t at = static_cast<std::size_t>(i) * r.ldc + j;
      if (std::memcmp(&r.c[at], &r.c0[at], sizeof(float)) != 0) return INFINITY;
    }
  }
  return worst;
}

std::vector<Case> sweep() {
  std::vector<Case> cases;
  const int shapes[][3] = {{1, 1, 1}, {1, 7, 3}, {5, 1, 9}, {3, 4, 1}, {13, 17, 19}, {2, 33, 65}, {64, 150, 48},
                           {64, 64, 150}, {130, 65, 257}, {96, 288, 96}};
  for (const auto& s : shapes) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      cases.push_back({s[0], s[1], s[2], ta, tb, 0, 1.0f, 0.0f});
      cases.push_back({s[0], s[1], s[2], ta, tb, 3, 0.125f, 0.0f});  // attention's scale, strided rows
      cases.push_back({s[0], s[1], s[2], ta, tb, 1, 1.0f, 1.0f});    // weight gradients: c +=
      cases.push_back({s[0], s[1], s[2], ta, tb, 0, -0.5f, 0.75f});
    }
  }
  return cases;
}

// Every case of the sweep through `kind`; returns the worst scaled difference, printed.
double sweep_worst(MatmulKind kind, bool bf16_reference) {
  const auto mm = make_matmul(kind);
  double worst = 0;
  std::string where;
  std::uint64_t seed = 100;
  for (const Case& k : sweep()) {
    Run r(k, seed += 3);
    r.compute(*mm, k);
    const double d = max_scaled_difference(r, k, bf16_reference);
    EXPECT_TRUE(std::isfinite(d)) << matmul_label(kind) << ": " << describe(k) << ": read c with beta 0, wrote outside c, or NaN";
    if (d > worst) worst = d, where = describe(k);
  }
  std::printf("[ measured ] %s against %s: max |difference| / sum|terms| %.3g (at %s)\n", matmul_label(kind).c_str(),
              bf16_reference ? "f32 sums of bf16-rounded operands" : "double", worst, where.c_str());
  return worst;
}

// f32 products, reordered f32 sums: at most about K u sum|terms| (u = 2^-24, K <= 288 here: 1.7e-5),
// in practice far less: measured 2.6e-7 for both here (AVX-512). The bound, 2e-6, is ~8x that and
// still far below what a lost or doubled term would show (about 1/K of sum|terms|).
TEST(Matmul, OpenblasF32MatchesDoubleReference) { EXPECT_LT(sweep_worst(MatmulKind::kOpenblasF32, false), 2e-6); }
TEST(Matmul, OnednnF32MatchesDoubleReference) { EXPECT_LT(sweep_worst(MatmulKind::kOnednnF32, false), 2e-6); }

// bf16 operands: the same exact products as the reference, summed in another order, so the only
// difference is f32 rounding (measured 1.4e-7 here), bounded as above. Operands rounded another
// way (truncated, say) would differ by ~2^-9 of sum|terms|.
TEST(Matmul, OnednnBf16MatchesF32SumsOfRoundedOperands) {
  if (!bf16_products_available()) GTEST_SKIP() << "this CPU has no bf16 instructions for oneDNN";
  EXPECT_LT(sweep_worst(MatmulKind::kOnednnBf16, true), 2e-6);
}

// The vectorised rounding of bf16 operands gives float_to_bf16's bits (its scalar twin) for every
// kind of value: ties both ways, subnormals, the largest finite values (some round to infinity),
// infinities, quiet and signalling NaNs of both signs, and many random bit patterns; rows strided.
TEST(Matmul, RoundingOperandsGivesFloatToBf16Bits) {
  std::vector<std::uint32_t> bits = {0x00000000u, 0x80000000u, 0x3F808000u, 0x3F818000u, 0x3F80FFFFu, 0x00000001u,
                                     0x807FFFFFu, 0x00408000u, 0x7F7F7FFFu, 0x7F7F8000u, 0xFF7FFFFFu, 0x7F800000u,
                                     0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0xFFA5A5A5u, 0x7FFFFFFFu};
  for (std::uint64_t i = 0; i < 4000; ++i) bits.push_back(static_cast<std::uint32_t>(counter_uniform(7, i) * 4294967296.0));
  const int cols = 37, ld = 41, rows = static_cast<int>((bits.size() + cols - 1) / cols);
  std::vector<float> src(static_cast<std::size_t>(rows) * ld, 0.0f);
  for (std::size_t i = 0; i < bits.size(); ++i) src[i / cols * ld + i % cols] = __builtin_bit_cast(float, bits[i]);
  std::vector<std::uint16_t> got(static_cast<std::size_t>(rows) * cols);
  round_rows_to_bf16(got.data(), src.data(), rows, cols, ld);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float x = src[i / cols * ld + i % cols];
    ASSERT_EQ(got[i], float_to_bf16(x)) << "input bits 0x" << std::hex << __builtin_bit_cast(std::uint32_t, x);
  }
}

// A bf16 run's weights reach the products in bf16, as the engine holds them (MatmulOperand::bf16),
// instead of widened to f32 and rounded back: the same bits, for either operand given so (the
// weight is b in forward and the input gradient), over the sweep's unpadded shapes and every
// transpose, alpha and beta. The bf16 values are the f32 operand's rounded here (a bf16 value
// widened rounds back to itself), so each pair of runs computes from the same bf16 numbers.
TEST(Matmul, Bf16OperandsGivenInBf16GiveTheBitsOfTheirF32Widening) {
  if (!bf16_products_available()) GTEST_SKIP() << "this CPU has no bf16 instructions for oneDNN";
  const auto mm = make_matmul(MatmulKind::kOnednnBf16);
  std::uint64_t seed = 900;
  int compared = 0;
  for (const Case& k : sweep()) {
    if (k.pad != 0) continue;
    zero::Run r(k, seed += 3);  // (gtest's Test::Run hides the name here)
    std::vector<std::uint16_t> a16(r.a.size()), b16(r.b.size());
    for (std::size_t i = 0; i < r.a.size(); ++i) a16[i] = float_to_bf16(r.a[i]), r.a[i] = bf16_to_float(a16[i]);
    for (std::size_t i = 0; i < r.b.size(); ++i) b16[i] = float_to_bf16(r.b[i]), r.b[i] = bf16_to_float(b16[i]);
    r.compute(*mm, k);  // both operands f32 (widened bf16 values), rounded inside
    for (int which = 0; which < 3; ++which) {  // a in bf16, b in bf16, both
      std::vector<float> c = r.c0;
      const MatmulOperand a{which == 0 || which == 2 ? nullptr : r.a.data(), r.lda, k.ta, which == 0 || which == 2 ? a16.data() : nullptr};
      const MatmulOperand b{which == 1 || which == 2 ? nullptr : r.b.data(), r.ldb, k.tb, which == 1 || which == 2 ? b16.data() : nullptr};
      mm->run(k.M, k.N, k.K, k.alpha, a, b, k.beta, c.data(), r.ldc);
      ASSERT_EQ(std::memcmp(c.data(), r.c.data(), c.size() * sizeof(float)), 0) << describe(k) << ", operand(s) in bf16: " << which;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 3 * 10 * 4 * 2);  // 10 shapes, 4 transposes, 2 unpadded alpha/beta cases each
}

// The f32 products refuse a bf16 operand (only a bf16 product reads one).
TEST(Matmul, F32ProductsRefuseBf16Operands) {
  const float x = 1.0f;
  const std::uint16_t x16 = float_to_bf16(x);
  float c = 0;
  for (MatmulKind kind : {MatmulKind::kOpenblasF32, MatmulKind::kOnednnF32}) {
    const auto mm = make_matmul(kind);
    EXPECT_ANY_THROW(mm->run(1, 1, 1, 1.0f, {&x, 1, false}, {nullptr, 1, false, &x16}, 0.0f, &c, 1)) << matmul_label(kind);
  }
}

// The rounding is round to nearest even: values halfway between two bf16 values go to the even one.
TEST(Matmul, Bf16ProductsRoundOperandsToNearestEven) {
  if (!bf16_products_available()) GTEST_SKIP() << "this CPU has no bf16 instructions for oneDNN";
  const float halfway_down = 1.0f + 1.0f / 256, halfway_up = 1.0f + 3.0f / 256;  // 1 + 2^-8, 1 + 3 * 2^-8
  const float a[2] = {halfway_down, halfway_up}, b[2] = {1.0f, 1.0f};
  float c[2] = {0, 0};
  const auto mm = make_matmul(MatmulKind::kOnednnBf16);
  mm->run(2, 1, 1, 1.0f, {a, 1, false}, {b, 1, false}, 0.0f, c, 1);
  EXPECT_EQ(c[0], 1.0f);                 // 1 + 2^-8 -> 1 (even)
  EXPECT_EQ(c[1], 1.0f + 4.0f / 256);    // 1 + 3 * 2^-8 -> 1 + 2^-6 (even)
}

// bf16 products exactly where the run is bf16 and oneDNN has bf16 instructions; OpenBLAS f32 for
// every other run. Run again by ctest with DNNL_MAX_CPU_ISA=AVX512_CORE (matmul_test_no_bf16_isa),
// which hides the instructions: the bf16 run then takes f32 products.
TEST(Matmul, RunChoosesBf16ProductsOnlyWhereTheCpuHasThem) {
  const char* max_isa = std::getenv("DNNL_MAX_CPU_ISA");
  if (max_isa != nullptr && std::string(max_isa) == "AVX512_CORE") {
    EXPECT_FALSE(bf16_products_available());
  }
  EXPECT_EQ(choose_matmul(Dtype::kBf16), bf16_products_available() ? MatmulKind::kOnednnBf16 : MatmulKind::kOpenblasF32);
  EXPECT_EQ(choose_matmul(Dtype::kF32), MatmulKind::kOpenblasF32);
  EXPECT_EQ(choose_matmul(Dtype::kF16), MatmulKind::kOpenblasF32);
  std::printf("[ measured ] a bf16 run here takes %s\n", matmul_label(choose_matmul(Dtype::kBf16)).c_str());
}

}  // namespace
}  // namespace zero
