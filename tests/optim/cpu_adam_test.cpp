// The CPU Adam kernel against its scalar twin (adam_reference), and the bf16/fp16 conversions
// against a conversion computed another way (nearest of all 2^16 values, in double).
#include "optim/cpu_adam.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/half.h"

namespace zero {
namespace {

// ---------------------------------------------------------------------------------------------
// Conversions

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
float float_of(std::uint32_t u) { return std::bit_cast<float>(u); }

std::uint32_t mix(std::uint64_t x) {  // splitmix64's finaliser: a counter-based hash
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::uint32_t>((x ^ (x >> 31)) >> 16);
}

// The oracle: every non-negative finite value of a 16-bit format, in order, as doubles, with
// infinity placed one ulp above the largest finite value (where IEEE rounding puts it).
struct HalfOracle {
  std::vector<double> value;  // value[k]: the value of bit pattern k
  std::uint16_t (*convert)(float);

  std::uint16_t nearest(float x) const {
    const double a = std::fabs(static_cast<double>(x));
    const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const auto hi = std::lower_bound(value.begin(), value.end(), a);
    if (hi == value.end()) return sign | static_cast<std::uint16_t>(value.size() - 1);  // past infinity
    const auto k_hi = static_cast<std::uint16_t>(hi - value.begin());
    if (*hi == a || k_hi == 0) return sign | k_hi;
    const std::uint16_t k_lo = k_hi - 1;
    const double below = a - value[k_lo], above = *hi - a;  // exact in double
    if (below < above) return sign | k_lo;
    if (above < below) return sign | k_hi;
    return sign | ((k_lo & 1) ? k_hi : k_lo);  // a tie: the even one
  }
};

HalfOracle bf16_oracle() {
  HalfOracle o{{}, float_to_bf16};
  for (std::uint32_t k = 0; k < 0x7F80; ++k) o.value.push_back(bf16_to_float(static_cast<std::uint16_t>(k)));
  o.value.push_back(std::ldexp(1.0, 128));  // 0x7F80: infinity
  return o;
}

HalfOracle fp16_oracle() {
  HalfOracle o{{}, float_to_fp16};
  for (std::uint32_t k = 0; k < 0x7C00; ++k) {  // decoded by hand here, not by fp16_to_float
    const std::uint32_t e = k >> 10, mant = k & 0x3FF;
    o.value.push_back(e == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, static_cast<int>(e) - 25));
  }
  o.value.push_back(65536.0);  // 0x7C00: infinity
  return o;
}

// Finite values chosen to hit the edges: ties, carries into the next exponent, subnormals,
// overflow to infinity; then a sweep over bit patterns of every exponent.
std::vector<float> edge_values() {
  std::vector<float> xs = {0.0f, 1.0f, 0.5f, 3.0f, 65504.0f, 65505.0f, 65519.99f, 65520.0f, 65536.0f, 1e30f,
                           std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                           std::numeric_limits<float>::denorm_min(), 0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1.000002p-25f,
                           0x1.8p-24f, 0x1.8p-25f, 0x1.ffcp-15f, 0x1.ffep-15f, 0x1.fffp-15f, 0x1.ffep-1f,
                           0x1.ffdp-1f, 0x1.ff8p+0f, 0x1.ff7fffp+0f};
  for (std::uint32_t u : {0x3F7FFFFFu, 0x3F808000u, 0x3F818000u, 0x3F808001u, 0x3F807FFFu, 0x7F7F8000u, 0x7F7F7FFFu,
                          0x7F7FFFFFu, 0x00008000u, 0x00018000u, 0x00007FFFu, 0x007FFFFFu, 0x007F8000u, 0x33000000u,
                          0x33000001u, 0x387FE000u, 0x387FF000u, 0x387FFFFFu, 0x477FE000u, 0x477FEFFFu, 0x477FF000u}) {
    xs.push_back(float_of(u));
  }
  for (std::uint64_t u = 0; u + 1021 < 0x7F800000u; u += 1021) xs.push_back(float_of(static_cast<std::uint32_t>(u + mix(u) % 1021)));
  const std::size_t n = xs.size();
  for (std::size_t i = 0; i < n; ++i) xs.push_back(-xs[i]);
  return xs;
}

std::vector<float> special_values() {
  const float inf = std::numeric_limits<float>::infinity();
  return {inf, -inf, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
          float_of(0x7F800001u), float_of(0xFF800001u), float_of(0x7FA5A5A5u), float_of(0x7FFFFFFFu), float_of(0x7F803FFFu)};
}

void expect_quiet_nan(HalfFormat f, float x, std::uint16_t h) {
  const std::uint32_t u = bits_of(x);
  if (f == HalfFormat::kBf16) {
    EXPECT_EQ(h, static_cast<std::uint16_t>((u >> 16) | 0x40)) << std::hex << u;  // sign, top payload, quiet bit
  } else {
    EXPECT_EQ(h, static_cast<std::uint16_t>(((u >> 16) & 0x8000) | 0x7E00 | ((u >> 13) & 0x3FF))) << std::hex << u;
  }
}

void check_against_oracle(HalfFormat f, const HalfOracle& oracle) {
  std::size_t wrong = 0;
  for (float x : edge_values()) {
    const std::uint16_t want = oracle.nearest(x), got = oracle.convert(x);
    if (want != got && ++wrong <= 10) ADD_FAILURE() << std::hex << "x bits " << bits_of(x) << ": want " << want << " got " << got;
  }
  EXPECT_EQ(wrong, 0u);
  const std::uint16_t inf = f == HalfFormat::kBf16 ? 0x7F80 : 0x7C00;
  EXPECT_EQ(oracle.convert(std::numeric_limits<float>::infinity()), inf);
  EXPECT_EQ(oracle.convert(-std::numeric_limits<float>::infinity()), inf | 0x8000);
  for (float x : special_values()) {
    if (std::isnan(x)) {
      expect_quiet_nan(f, x, oracle.convert(x));
    }
  }
}

TEST(HalfConversion, Bf16IsNearestEven) { check_against_oracle(HalfFormat::kBf16, bf16_oracle()); }
TEST(HalfConversion, Fp16IsNearestEven) { check_against_oracle(HalfFormat::kFp16, fp16_oracle()); }

TEST(HalfConversion, NamedCases) {
  EXPECT_EQ(float_to_bf16(float_of(0x3F7FFFFFu)), 0x3F80);  // rounds up into the next exponent
  EXPECT_EQ(float_to_bf16(float_of(0x3F808000u)), 0x3F80);  // a tie goes to even (down)
  EXPECT_EQ(float_to_bf16(float_of(0x3F818000u)), 0x3F82);  // a tie goes to even (up)
  EXPECT_EQ(float_to_bf16(float_of(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX overflows to infinity
  EXPECT_EQ(float_to_bf16(float_of(0x00018000u)), 0x0002);  // subnormal tie, up to even
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(65519.99f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00);                // the tie past the largest half is infinity
  EXPECT_EQ(float_to_fp16(0x1.ffep-1f), 0x3C00);             // rounds up into the next exponent
  EXPECT_EQ(float_to_fp16(0x1.ffep-15f), 0x0400);            // largest subnormal rounds up to the smallest normal
  EXPECT_EQ(float_to_fp16(0x1p-24f), 0x0001);
  EXPECT_EQ(float_to_fp16(0x1p-25f), 0x0000);                // a tie between 0 and 2^-24 goes to 0
  EXPECT_EQ(float_to_fp16(0x1.8p-24f), 0x0002);              // a tie between 1 and 2 ulps goes to 2
  EXPECT_EQ(float_to_fp16(-0x1.000002p-25f), 0x8001);
}

TEST(HalfConversion, DecodeRoundTrips) {
  const HalfOracle fp16 = fp16_oracle();
  for (std::uint32_t k = 0; k < 0x10000; ++k) {
    const auto h = static_cast<std::uint16_t>(k);
    const float x = fp16_to_float(h);
    if ((k & 0x7FFF) < 0x7C00) {
      ASSERT_EQ(static_cast<double>(std::fabs(x)), fp16.value[k & 0x7FFF]) << k;
    }
    if (std::isnan(x)) {
      ASSERT_EQ(float_to_fp16(x), h | 0x0200) << k;  // NaN comes back quiet
    } else {
      ASSERT_EQ(float_to_fp16(x), h) << k;
      ASSERT_EQ(float_to_bf16(bf16_to_float(h)), h) << k;
    }
  }
}

// F16C is what the AVX2 and AVX-512 kernels use for fp16; float_to_fp16 must be it exactly.
__attribute__((target("f16c"))) std::uint16_t fp16_by_f16c(float x) {
  return static_cast<std::uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT), 0));
}

TEST(HalfConversion, Fp16MatchesF16c) {
  if (!cpu_isa_supported(CpuIsa::kAvx2)) GTEST_SKIP() << "this CPU has no F16C";
  std::vector<float> xs = edge_values();
  for (float x : special_values()) xs.push_back(x);
  for (std::uint32_t u = 0x7F800001u; u < 0x80000000u; u += 4093) xs.push_back(float_of(u));  // NaN payloads
  std::size_t wrong = 0;
  for (float x : xs) {
    if (float_to_fp16(x) != fp16_by_f16c(x) && ++wrong <= 10) ADD_FAILURE() << std::hex << "x bits " << bits_of(x);
  }
  EXPECT_EQ(wrong, 0u);
}

// ---------------------------------------------------------------------------------------------
// The kernel against adam_reference

// Aligned storage with a chosen misalignment (in floats) of the start.
template <class T>
struct Buffer {
  std::vector<T> storage;
  T* data;
  Buffer(std::size_t n, std::size_t offset) : storage(n + offset + 64 / sizeof(T)) {
    auto base = reinterpret_cast<std::uintptr_t>(storage.data());
    data = reinterpret_cast<T*>((base + 63) / 64 * 64) + offset;
  }
};

struct State {  // p, m, v and the copy of one run, each at its own misalignment
  Buffer<float> p, m, v;
  Buffer<std::uint16_t> copy;
  std::size_t n;
  State(std::size_t n_, std::size_t offset) : p(n_, offset), m(n_, (offset * 3) % 16), v(n_, (offset * 5) % 16), copy(n_, offset), n(n_) {
    for (std::size_t i = 0; i < n; ++i) {
      p.data[i] = i % 17 == 0 ? 0.0f : static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
      m.data[i] = v.data[i] = 0.0f;
      copy.data[i] = 0;
    }
  }
};

// Step t's gradient: hashed, spread over magnitudes 1e-8 .. 1e2, with exact zeros and both signs.
void fill_gradient(float* g, std::size_t n, int t) {
#pragma omp parallel for num_threads(2) schedule(static) if (n > (1 << 16))
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t h = mix((static_cast<std::uint64_t>(t) << 40) ^ i);
    if (h % 53 == 0) { g[i] = 0.0f; continue; }
    static constexpr double kScale[11] = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2};
    const double u = static_cast<double>(h & 0xFFFFF) / 0x80000 - 1.0;  // [-1, 1)
    g[i] = static_cast<float>(u * kScale[(h >> 20) % 11]);
  }
}

struct Difference {
  std::size_t mismatched = 0;
  double max_abs = 0, max_rel = 0;
  void add(const float* want, const float* got, std::size_t n) {
    if (n == 0 || std::memcmp(want, got, n * sizeof(float)) == 0) return;
    for (std::size_t i = 0; i < n; ++i) {
      if (bits_of(want[i]) == bits_of(got[i])) continue;
      ++mismatched;
      const double d = std::fabs(static_cast<double>(want[i]) - got[i]);
      max_abs = std::max(max_abs, d);
      max_rel = std::max(max_rel, d / std::max(std::fabs(static_cast<double>(want[i])), 1e-30));
    }
  }
  void add(const std::uint16_t* want, const std::uint16_t* got, std::size_t n) {
    if (n == 0 || std::memcmp(want, got, n * sizeof(std::uint16_t)) == 0) return;
    for (std::size_t i = 0; i < n; ++i) mismatched += want[i] != got[i];
  }
};

struct KernelRun {  // one way of calling the kernel
  CpuIsa isa;
  int threads;
  std::size_t tile;  // 0: the default
};

enum class Mode { kAdamW, kAdamL2, kNoDecay, kNoBiasCorrection };  // the last: AdamW, bias_correction false
const char* mode_name(Mode m) {
  return m == Mode::kAdamW ? "AdamW" : m == Mode::kAdamL2 ? "Adam+L2" : m == Mode::kNoDecay ? "no-decay" : "no bias correction";
}
const char* copy_name(int copy) { return copy == 0 ? "no copy" : copy == 1 ? "bf16 copy" : "fp16 copy"; }

// adam_reference over [0, n) in pieces on two threads: elements are independent, so this is the
// reference's answer, sooner (the reference calls libm's fmaf: ~7 ns per element).
void reference_step(const AdamStep& s, bool decay, State& ref, const float* g, int copy) {
  const std::size_t n = ref.n, piece = 1 << 16;
#pragma omp parallel for num_threads(2) schedule(static) if (n > piece)
  for (std::size_t begin = 0; begin < n; begin += piece) {
    const std::size_t end = std::min(n, begin + piece);
    adam_reference(s, decay, ref.p.data + begin, g + begin, ref.m.data + begin, ref.v.data + begin, end - begin);
    for (std::size_t i = begin; copy != 0 && i < end; ++i) {
      ref.copy.data[i] = copy == 1 ? float_to_bf16(ref.p.data[i]) : float_to_fp16(ref.p.data[i]);
    }
  }
}

// Runs `steps` steps of adam_reference and of the kernel (in each of `runs`) side by side from
// the same start; after every step p, m, v and the copy must be identical, bit for bit.
void expect_identical(const std::vector<KernelRun>& runs, std::size_t n, std::size_t offset, Mode mode,
                      int copy /*0 none, 1 bf16, 2 fp16*/, int steps, bool report = false) {
  AdamConfig c;
  c.lr = 1e-2f;
  c.weight_decay = 0.1f;
  c.decoupled = mode != Mode::kAdamL2;
  c.bias_correction = mode != Mode::kNoBiasCorrection;
  const bool decay = mode != Mode::kNoDecay;
  State ref(n, offset);
  std::vector<State> kernel;
  for (std::size_t r = 0; r < runs.size(); ++r) kernel.emplace_back(n, offset);
  std::vector<Difference> diff(runs.size());
  Buffer<float> g(n, (offset * 7) % 16);
  for (int t = 1; t <= steps; ++t) {
    fill_gradient(g.data, n, t);
    const AdamStep s = adam_step_scalars(c, t);
    reference_step(s, decay, ref, g.data, copy);
    for (std::size_t r = 0; r < runs.size(); ++r) {
      State& k = kernel[r];
      AdamOptions o;
      o.isa = runs[r].isa;
      o.threads = runs[r].threads;
      o.tile = runs[r].tile;
      if (copy != 0) o.copy = {k.copy.data, n};
      o.copy_format = copy == 2 ? HalfFormat::kFp16 : HalfFormat::kBf16;
      adam_step(s, decay, {k.p.data, n}, {g.data, n}, {k.m.data, n}, {k.v.data, n}, o);
      diff[r].add(ref.p.data, k.p.data, n);
      diff[r].add(ref.m.data, k.m.data, n);
      diff[r].add(ref.v.data, k.v.data, n);
      diff[r].add(ref.copy.data, k.copy.data, n);
    }
  }
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::ostringstream what;
    what << cpu_isa_name(runs[r].isa) << ", " << runs[r].threads << " thread(s), tile " << runs[r].tile << ", n=" << n
         << " offset " << offset << ", " << mode_name(mode) << ", " << copy_name(copy) << ", " << steps
         << " steps: " << diff[r].mismatched << " values differ, max abs difference " << diff[r].max_abs
         << ", max relative " << diff[r].max_rel;
    EXPECT_EQ(diff[r].mismatched, 0u) << what.str();
    if (report) std::cout << "[ report   ] " << what.str() << "\n";
  }
}

class CpuAdamIsa : public ::testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (!cpu_isa_supported(GetParam())) GTEST_SKIP() << "this CPU (or build) cannot run " << cpu_isa_name(GetParam());
  }
};

TEST_P(CpuAdamIsa, BitIdenticalOnSmallRuns) {
  for (std::size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 33, 1000}) {
    for (std::size_t offset : {0, 1, 5}) {
      for (Mode mode : {Mode::kAdamW, Mode::kAdamL2, Mode::kNoDecay, Mode::kNoBiasCorrection}) {
        for (int copy : {0, 1, 2}) expect_identical({{GetParam(), 1, 0}, {GetParam(), 2, 0}, {GetParam(), 2, 24}}, n, offset, mode, copy, 100);
      }
    }
  }
}

// NaN and Inf gradients propagate as in the reference: every non-NaN result identical, NaN
// exactly where the reference has NaN.
TEST_P(CpuAdamIsa, NanAndInfPropagateAsInTheReference) {
  const std::size_t n = 100;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (Mode mode : {Mode::kAdamW, Mode::kAdamL2}) {
    AdamConfig c;
    c.decoupled = mode == Mode::kAdamW;
    c.weight_decay = 0.01f;
    State ref(n, 0), k(n, 1);
    std::vector<float> g(n);
    for (int t = 1; t <= 3; ++t) {
      fill_gradient(g.data(), n, t);
      g[3] = nan, g[10] = inf, g[20] = -inf, g[31] = t == 2 ? nan : 1.0f;
      ref.p.data[40] = k.p.data[40] = inf;
      const AdamStep s = adam_step_scalars(c, t);
      adam_reference(s, true, ref.p.data, g.data(), ref.m.data, ref.v.data, n);
      AdamOptions o;
      o.isa = GetParam();
      o.copy = {k.copy.data, n};
      adam_step(s, true, {k.p.data, n}, g, {k.m.data, n}, {k.v.data, n}, o);
      for (std::size_t i = 0; i < n; ++i) {
        using Pair = std::pair<float, float>;
        for (auto [want, got] : {Pair{ref.p.data[i], k.p.data[i]}, Pair{ref.m.data[i], k.m.data[i]}, Pair{ref.v.data[i], k.v.data[i]}}) {
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << i;
          } else {
            EXPECT_EQ(bits_of(want), bits_of(got)) << i;
          }
        }
        EXPECT_EQ(std::isnan(bf16_to_float(k.copy.data[i])), std::isnan(k.p.data[i])) << i;
      }
    }
    EXPECT_TRUE(std::isnan(k.p.data[3]) && std::isnan(k.m.data[3]) && std::isnan(k.v.data[3]));
    if (mode == Mode::kAdamW) {  // with L2 decay the NaN p feeds back into g, so m and v turn NaN too
      EXPECT_TRUE(std::isinf(k.m.data[10]) && std::isinf(k.v.data[10]) && std::isnan(k.p.data[10]));
    }
  }
}

// With lr = 0 and zero gradients a step leaves p as it is, so the copy is the conversion of the
// input: this drives every edge and special value through each ISA's vector conversion, with
// the copy aligned (more than 2^20 elements: streaming stores) and misaligned (plain stores).
TEST_P(CpuAdamIsa, CopyConvertsEdgesAndSpecials) {
  std::vector<float> xs = special_values();  // first, so they land in full vectors too
  for (float x : edge_values()) xs.push_back(x);
  for (float x : special_values()) xs.push_back(x);
  const std::size_t n = xs.size();
  ASSERT_GT(n, std::size_t{1} << 20);
  AdamConfig c;
  c.lr = 0.0f;
  for (std::size_t copy_offset : {0, 1}) {
    for (HalfFormat f : {HalfFormat::kBf16, HalfFormat::kFp16}) {
      Buffer<float> p(n, 0), g(n, 0), m(n, 0), v(n, 0);
      Buffer<std::uint16_t> copy(n, copy_offset);
      std::copy(xs.begin(), xs.end(), p.data);
      std::fill_n(g.data, n, 0.0f);
      std::fill_n(m.data, n, 0.0f);
      std::fill_n(v.data, n, 0.0f);
      AdamOptions o;
      o.isa = GetParam();
      o.copy = {copy.data, n};
      o.copy_format = f;
      o.threads = 2;
      adam_step(adam_step_scalars(c, 1), false, {p.data, n}, {g.data, n}, {m.data, n}, {v.data, n}, o);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (std::isnan(xs[i])) {
          ASSERT_TRUE(std::isnan(p.data[i]));
          expect_quiet_nan(f, p.data[i], copy.data[i]);
          continue;
        }
        ASSERT_EQ(bits_of(p.data[i]), bits_of(xs[i])) << i;
        const std::uint16_t want = f == HalfFormat::kBf16 ? float_to_bf16(xs[i]) : float_to_fp16(xs[i]);
        if (copy.data[i] != want && ++wrong <= 10) {
          ADD_FAILURE() << std::hex << "x bits " << bits_of(xs[i]) << " want " << want << " got " << copy.data[i];
        }
      }
      EXPECT_EQ(wrong, 0u) << half_format_name(f) << ", copy offset " << copy_offset;
    }
  }
}

TEST_P(CpuAdamIsa, CeilingLoopMovesTheSameData) {
  const std::size_t n = 1001;
  std::vector<float> p(n, 1.0f), g(n, 0.5f), m(n, 2.0f), v(n, 3.0f);
  std::vector<std::uint16_t> copy(n);
  AdamOptions o;
  o.isa = GetParam();
  o.copy = copy;
  o.threads = 2;
  o.tile = 64;
  adam_traffic_ceiling(p, g, m, v, o);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(p[i], 1.5f);
    ASSERT_EQ(m[i], 2.5f);
    ASSERT_EQ(v[i], 3.5f);
    ASSERT_EQ(copy[i], float_to_bf16(1.5f));
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuAdamIsa, ::testing::Values(CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512),
                         [](const auto& param_info) { return std::string(cpu_isa_name(param_info.param)); });

// 2^20 + 3 elements (long enough for many tiles per thread and for the streamed copy): every ISA
// this CPU runs, on 1 and 2 threads, against one reference run (the scalar kernel, as slow as
// the reference, on 2 threads only). Each mode and copy format appears once;
// BitIdenticalOnSmallRuns covers all their combinations.
TEST(CpuAdam, BitIdenticalOnAMillion) {
  std::vector<KernelRun> runs;
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (!cpu_isa_supported(isa)) {
      std::cout << "[ report   ] skipping " << cpu_isa_name(isa) << ": this CPU (or build) cannot run it\n";
      continue;
    }
    if (isa != CpuIsa::kScalar) runs.push_back({isa, 1, 0});
    runs.push_back({isa, 2, 0});
  }
  const std::size_t n = (std::size_t{1} << 20) + 3;
  expect_identical(runs, n, 3, Mode::kAdamW, 1, 100, true);
  // The other two for 20 steps: the reference costs ~7 ns per element, and the small runs above
  // already take every combination through 100 steps.
  expect_identical(runs, n, 0, Mode::kAdamL2, 2, 20, true);
  expect_identical(runs, n, 1, Mode::kNoDecay, 0, 20, true);
}

// ---------------------------------------------------------------------------------------------
// The API's edges

TEST(CpuAdam, IsaNamesAndChoice) {
  for (CpuIsa isa : {CpuIsa::kAuto, CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    EXPECT_EQ(cpu_isa_parse(cpu_isa_name(isa)), isa);
  }
  EXPECT_THROW(cpu_isa_parse("sse9"), ConfigError);
  EXPECT_TRUE(cpu_isa_supported(adam_isa_active()));
  EXPECT_NE(adam_isa_active(), CpuIsa::kAuto);
  std::cout << "[ report   ] active Adam kernel on this CPU: " << cpu_isa_name(adam_isa_active()) << "\n";
}

void expect_config_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("[optim]", 0), 0u) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
  }
}

TEST(CpuAdam, RejectsBadSpans) {
  const AdamStep s = adam_step_scalars(AdamConfig{}, 1);
  std::vector<float> p(10), g(10), m(10), v(10), short_g(9);
  std::vector<std::uint16_t> copy(10), short_copy(7);
  expect_config_error([&] { adam_step(s, true, p, short_g, m, v); }, "gradient span has 9 elements");
  expect_config_error([&] { adam_step(s, true, p, g, std::span<float>(m).first(5), v); }, "first-moment");
  expect_config_error([&] { adam_step(s, true, p, g, m, std::span<float>(static_cast<float*>(nullptr), 10)); }, "null");
  expect_config_error([&] { adam_step(s, true, std::span<float>(static_cast<float*>(nullptr), 10), g, m, v); }, "null");
  expect_config_error([&] { adam_step(s, true, p, g, m, v, {.copy = short_copy}); }, "bf16 copy");
  expect_config_error([&] { adam_step(s, true, p, g, m, v, {.copy = {static_cast<std::uint16_t*>(nullptr), 10}}); }, "null");
  expect_config_error([&] { adam_step(s, true, p, g, p, v); }, "overlap");
  std::vector<float> mv(15);
  expect_config_error([&] { adam_step(s, true, p, g, std::span<float>(mv).first(10), std::span<float>(mv).last(10)); },
                      "first-moment (m) and second-moment (v) spans overlap");
  expect_config_error([&] { adam_step(s, true, p, g, m, v, {.copy = {reinterpret_cast<std::uint16_t*>(v.data()), 10}}); }, "overlap");
  expect_config_error([&] { adam_step(s, true, p, g, m, v, {.threads = -1}); }, "threads");
  expect_config_error([&] { adam_traffic_ceiling(p, short_g, m, v); }, "adam_traffic_ceiling");
  // Empty runs are fine, with or without buffers.
  adam_step(s, true, {}, {}, {}, {});
  adam_step(s, true, std::span<float>(p).first(0), std::span<float>(g).first(0), std::span<float>(m).first(0), std::span<float>(v).first(0));
}

TEST(CpuAdam, BadHyperparametersAreRejectedBeforeTheKernel) {
  AdamConfig c;
  c.lr = std::nanf("");
  EXPECT_THROW(adam_step_scalars(c, 1), ConfigError);
  c = {};
  c.beta2 = 1.0f;
  EXPECT_THROW(adam_step_scalars(c, 1), ConfigError);
}

}  // namespace
}  // namespace zero
