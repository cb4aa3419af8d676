// The GPT's fast CPU kernels against plain scalar twins: blocked-GEMM attention (f32 and bf16
// products) against the per-element loops it replaced and, at odd shapes, against NumPy
// (attention_reference.py, run with Debian's /usr/bin/python3), the vectorised exp/tanh/GELU
// against libm and against the same formula in a scalar loop (bit for bit), and every kernel's
// bits independent of the OpenMP thread count.
#include "backends/cpu/gpt_kernels.h"

#include <cblas.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backends/cpu/vector_math.h"
#include "common/error.h"
#include "common/half.h"
#include "partition/init.h"
#include "zero/gpt_kernel_table.h"

namespace zero::gpt {
namespace {

std::vector<float> random_vector(std::size_t n, std::uint64_t key, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((counter_uniform(key, i) * 2 - 1) * scale);
  return v;
}

struct Diff {
  double max_abs = 0, max_ref = 0;
  void add(double got, double ref) {
    max_abs = std::max(max_abs, std::abs(got - ref));
    max_ref = std::max(max_ref, std::abs(ref));
  }
  double rel() const { return max_ref > 0 ? max_abs / max_ref : max_abs; }
};

// The scalar twin: causal attention one query at a time, in double (as the kernels did before
// they became matrix products).
void attention_reference(std::vector<double>& out, std::vector<double>& dqkv, const std::vector<float>& qkv,
                         const std::vector<float>& dout, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  auto at = [&](int b, int t, int part, int h, int i) { return static_cast<std::size_t>((b * T + t) * 3 * C + part * C + h * hs + i); };
  out.assign(static_cast<std::size_t>(B) * T * C, 0.0);
  dqkv.assign(qkv.size(), 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        std::vector<double> a(t + 1), da(t + 1);
        double mx = -1e300, sum = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          double s = 0;
          for (int i = 0; i < hs; ++i) s += double(qkv[at(b, t, 0, h, i)]) * qkv[at(b, t2, 1, h, i)];
          a[t2] = s * scale;
          mx = std::max(mx, a[t2]);
        }
        for (auto& e : a) sum += (e = std::exp(e - mx));
        for (auto& e : a) e /= sum;
        const float* d = &dout[static_cast<std::size_t>((b * T + t) * C + h * hs)];
        double dot = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          for (int i = 0; i < hs; ++i) {
            out[(b * T + t) * C + h * hs + i] += a[t2] * qkv[at(b, t2, 2, h, i)];
            da[t2] += d[i] * double(qkv[at(b, t2, 2, h, i)]);
            dqkv[at(b, t2, 2, h, i)] += a[t2] * d[i];
          }
          dot += a[t2] * da[t2];
        }
        for (int t2 = 0; t2 <= t; ++t2) {
          const double g = a[t2] * (da[t2] - dot) * scale;
          for (int i = 0; i < hs; ++i) {
            dqkv[at(b, t, 0, h, i)] += g * qkv[at(b, t2, 1, h, i)];
            dqkv[at(b, t2, 1, h, i)] += g * qkv[at(b, t, 0, h, i)];
          }
        }
      }
}

struct AttentionRun {
  std::vector<float> out, preatt, att, dqkv, dpreatt, datt;
  AttentionRun(Matmul& mm, const std::vector<float>& qkv, const std::vector<float>& dout, int B, int T, int C, int NH) {
    const std::size_t tt = static_cast<std::size_t>(B) * NH * T * T;
    out.assign(static_cast<std::size_t>(B) * T * C, 0.0f);
    preatt.assign(tt, 0.0f), att.assign(tt, 0.0f), dpreatt.assign(tt, 0.0f), datt.assign(tt, 0.0f);
    dqkv.assign(qkv.size(), 123.0f);  // overwritten, not accumulated
    attention_forward(mm, out.data(), preatt.data(), att.data(), qkv.data(), B, T, C, NH);
    attention_backward(mm, dqkv.data(), dpreatt.data(), datt.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
  }
};

// Attention through `kind`'s products against the double reference: max relative differences
// of the forward output and of dqkv must stay under the bounds.
void check_attention(MatmulKind kind, double fwd_bound, double bwd_bound) {
  // T = 150: three blocks of query rows, the last one partial.
  const int B = 2, T = 150, C = 48, NH = 3;
  const auto qkv = random_vector(static_cast<std::size_t>(B) * T * 3 * C, 1, 1.5f);
  const auto dout = random_vector(static_cast<std::size_t>(B) * T * C, 2, 1.0f);
  const auto mm = make_matmul(kind);
  const AttentionRun run(*mm, qkv, dout, B, T, C, NH);
  std::vector<double> out, dqkv;
  attention_reference(out, dqkv, qkv, dout, B, T, C, NH);
  Diff fwd, bwd;
  for (std::size_t i = 0; i < out.size(); ++i) fwd.add(run.out[i], out[i]);
  for (std::size_t i = 0; i < dqkv.size(); ++i) bwd.add(run.dqkv[i], dqkv[i]);
  std::printf("[ measured ] attention with %s: forward max abs diff %.3g (rel %.3g), backward %.3g (rel %.3g)\n",
              matmul_label(kind).c_str(), fwd.max_abs, fwd.rel(), bwd.max_abs, bwd.rel());
  EXPECT_LT(fwd.rel(), fwd_bound);
  EXPECT_LT(bwd.rel(), bwd_bound);
  for (int b = 0; b < B; ++b)  // att is exactly zero above the diagonal
    for (int t = 0; t < T; ++t)
      for (int t2 = t + 1; t2 < T; ++t2) ASSERT_EQ(run.att[(static_cast<std::size_t>(b) * NH * T + t) * T + t2], 0.0f);
}

TEST(GptKernels, AttentionMatchesPerQueryReference) { check_attention(MatmulKind::kOpenblasF32, 2e-6, 1e-5); }

// bf16 products (the kernels take any Matmul; the cpu table keeps attention's f32 for speed today):
// the operands' rounding (up to 2^-9 relative each) dominates; measured here 3.9e-3 (forward) and
// 2.0e-3 (backward) relative.
TEST(GptKernels, AttentionWithBf16ProductsStaysNearReference) {
  if (!bf16_products_available()) GTEST_SKIP() << "this CPU has no bf16 instructions for oneDNN";
  check_attention(MatmulKind::kOnednnBf16, 1e-2, 1e-2);
}

void write_raw(const std::filesystem::path& path, const std::vector<float>& v) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  ASSERT_TRUE(out.good()) << path;
}

// The fused attention (each block's softmax in place after its product) against float64 NumPy at
// T not a multiple of the 64-row block (1, 63, 65, 129, 130) and at 64, head sizes 4 to 96: att,
// out and dqkv. att and datt start as NaN, so an entry a product reads before the kernels write
// it shows; preatt and dpreatt must come back untouched.
TEST(GptKernels, AttentionMatchesNumpyAtOddShapes) {
  struct Shape {
    const char* name;
    int B, T, C, NH;
  };
  const Shape shapes[] = {{"t1", 1, 1, 8, 2},    {"t63", 2, 63, 48, 3},  {"t64", 1, 64, 32, 2},
                          {"t65", 1, 65, 64, 4}, {"t130", 2, 130, 40, 5}, {"t129_hs96", 1, 129, 96, 1},
                          {"t70_hs4", 1, 70, 32, 8}};
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "attention_reference";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream cases(dir / "cases.txt");
  const auto mm = make_matmul(MatmulKind::kOpenblasF32);
  for (const Shape& s : shapes) {
    const std::size_t btc = static_cast<std::size_t>(s.B) * s.T * s.C, tt = static_cast<std::size_t>(s.B) * s.NH * s.T * s.T;
    const auto qkv = random_vector(3 * btc, 21, 1.5f), dout = random_vector(btc, 22, 1.0f);
    std::vector<float> out(btc), att(tt, NAN), datt(tt, NAN), preatt(tt, 5.0f), dpreatt(tt, 5.0f), dqkv(3 * btc, NAN);
    attention_forward(*mm, out.data(), preatt.data(), att.data(), qkv.data(), s.B, s.T, s.C, s.NH);
    attention_backward(*mm, dqkv.data(), dpreatt.data(), datt.data(), dout.data(), qkv.data(), att.data(), s.B, s.T, s.C, s.NH);
    for (std::size_t i = 0; i < tt; ++i) ASSERT_TRUE(preatt[i] == 5.0f && dpreatt[i] == 5.0f) << s.name << " wrote preatt";
    const std::string name = s.name;
    write_raw(dir / (name + ".qkv"), qkv), write_raw(dir / (name + ".dout"), dout), write_raw(dir / (name + ".out"), out);
    write_raw(dir / (name + ".att"), att), write_raw(dir / (name + ".dqkv"), dqkv);
    cases << name << ' ' << s.B << ' ' << s.T << ' ' << s.C << ' ' << s.NH << '\n';
  }
  cases.close();
  const std::string command = std::string("/usr/bin/python3 ") + ZERO_TEST_SOURCE_DIR + "/model/attention_reference.py " + dir.string();
  EXPECT_EQ(std::system(command.c_str()), 0) << "the NumPy reference disagrees (its output above says where)";
}

TEST(GptKernels, ExpAndGeluMatchLibm) {
  Diff e, g, dg;
  double max_exp_rel = 0;
  for (int i = 0; i <= 200000; ++i) {
    const float x = -87.0f + 175.0f * static_cast<float>(i) / 200000.0f;
    const double ref = std::exp(static_cast<double>(x));
    max_exp_rel = std::max(max_exp_rel, std::abs(exp_approx(x) - ref) / ref);
  }
  for (int i = 0; i <= 200000; ++i) {
    const double x = -12.0 + 24.0 * i / 200000.0;
    const double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x), th = std::tanh(u);
    g.add(gelu(static_cast<float>(x)), 0.5 * x * (1 + th));
    dg.add(gelu_derivative(static_cast<float>(x)),
           0.5 * (1 + th) + 0.5 * x * (1 - th * th) * std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * x * x));
  }
  std::printf("[ measured ] exp_approx max rel err %.3g; gelu max abs err %.3g, gelu' max abs err %.3g\n", max_exp_rel,
              g.max_abs, dg.max_abs);
  EXPECT_LT(max_exp_rel, 3e-7);
  EXPECT_LT(g.max_abs, 2e-6);  // |x| <= 12: a few ulp of x
  EXPECT_LT(dg.max_abs, 5e-6);  // tanh's ~1e-7 absolute error times x (1 + 0.134 x^2) / 2
  EXPECT_EQ(exp_approx(-1000.0f), exp_approx(-87.0f));
  EXPECT_TRUE(std::isnan(exp_approx(NAN)));
  EXPECT_EQ(tanh_approx(50.0f), 1.0f);
  EXPECT_EQ(tanh_approx(-50.0f), -1.0f);
}

TEST(GptKernels, VectorisedGeluEqualsScalarTwinBitForBit) {
  const std::int64_t n = 40000 + 7;  // several spans and a ragged end
  const auto x = random_vector(n, 3, 6.0f), d = random_vector(n, 4, 1.0f);
  std::vector<float> out(n), dinp(n);
  gelu_forward(out.data(), x.data(), n);
  gelu_backward(dinp.data(), x.data(), d.data(), n);
  for (std::int64_t i = 0; i < n; ++i) {
    volatile float xi = x[i];  // keep the twin scalar
    ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(gelu(xi))) << i;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(dinp[i]), std::bit_cast<std::uint32_t>(gelu_derivative(xi) * d[i])) << i;
  }
}

TEST(GptKernels, LayerNormMatchesDoubleReference) {
  const int N = 37, C = 200;  // C not a multiple of the 16 lanes or of the 64-channel chunks
  const auto x = random_vector(static_cast<std::size_t>(N) * C, 5, 2.0f), w = random_vector(C, 6, 1.0f),
             b = random_vector(C, 7, 1.0f), d = random_vector(static_cast<std::size_t>(N) * C, 8, 1.0f);
  std::vector<float> out(x.size()), mean(N), rstd(N), dx(x.size(), 0.0f), dw(C, 0.0f), db(C, 0.0f);
  layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  layernorm_backward(dx.data(), dw.data(), db.data(), d.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
  Diff fo, fdx, fdw;
  std::vector<double> rdw(C, 0.0), rdb(C, 0.0);
  for (int n = 0; n < N; ++n) {
    double m = 0, v = 0, a1 = 0, a2 = 0;
    for (int i = 0; i < C; ++i) m += x[n * C + i];
    m /= C;
    for (int i = 0; i < C; ++i) v += (x[n * C + i] - m) * (x[n * C + i] - m);
    const double s = 1 / std::sqrt(v / C + 1e-5);
    for (int i = 0; i < C; ++i) {
      const double norm = (x[n * C + i] - m) * s;
      fo.add(out[n * C + i], norm * w[i] + b[i]);
      a1 += w[i] * d[n * C + i];
      a2 += w[i] * d[n * C + i] * norm;
      rdw[i] += norm * d[n * C + i];
      rdb[i] += d[n * C + i];
    }
    for (int i = 0; i < C; ++i) {
      const double norm = (x[n * C + i] - m) * s;
      fdx.add(dx[n * C + i], (w[i] * d[n * C + i] - a1 / C - norm * a2 / C) * s);
    }
  }
  for (int i = 0; i < C; ++i) fdw.add(dw[i], rdw[i]), fdw.add(db[i], rdb[i]);
  std::printf("[ measured ] layernorm: out rel %.3g, dx rel %.3g, dw/db rel %.3g\n", fo.rel(), fdx.rel(), fdw.rel());
  EXPECT_LT(fo.rel(), 1e-6);
  EXPECT_LT(fdx.rel(), 1e-5);
  EXPECT_LT(fdw.rel(), 1e-5);
}

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// The fused passes (a linear layer's bias with the GELU or residual next to it, the GELU's
// backward with the bias gradient) against the separate kernels they replace, bit for bit, at
// shapes that are not multiples of the 16 lanes, the 16-row blocks or a thread's column range,
// with 1 and 3 OpenMP threads (3 column ranges, the last one short).
TEST(GptKernels, FusedBiasPassesEqualTheSeparateKernelsBitForBit) {
  struct RestoreThreads {
    int before = omp_get_max_threads();
    ~RestoreThreads() { omp_set_num_threads(before); }  // also after a failed ASSERT's return
  } restore;
  const auto mm = make_matmul(MatmulKind::kOpenblasF32);
  const int N = 37, C = 29, OC = 71;
  const auto inp = random_vector(static_cast<std::size_t>(N) * C, 31, 1.0f), w = random_vector(static_cast<std::size_t>(OC) * C, 32, 0.5f),
             bias = random_vector(OC, 33, 0.5f), res = random_vector(static_cast<std::size_t>(N) * OC, 34, 1.0f),
             dact = random_vector(static_cast<std::size_t>(N) * OC, 35, 1.0f), dbias0 = random_vector(OC, 36, 1.0f);
  const std::size_t n = static_cast<std::size_t>(N) * OC;
  // The separate kernels: the product with its bias, then GELU and the residual; the GELU's
  // backward, then the bias gradient as the linear layer's backward takes it (dbias += column sums).
  std::vector<float> pre(n), act(n), sum(n), dpre(n), dinp(static_cast<std::size_t>(N) * C), dw(w.size(), 0.0f), dbias = dbias0;
  matmul_forward(*mm, pre.data(), inp.data(), w.data(), bias.data(), N, C, OC);
  gelu_forward(act.data(), pre.data(), static_cast<std::int64_t>(n));
  residual_forward(sum.data(), res.data(), pre.data(), static_cast<std::int64_t>(n));
  gelu_backward(dpre.data(), pre.data(), dact.data(), static_cast<std::int64_t>(n));
  matmul_backward(*mm, dinp.data(), dw.data(), dbias.data(), dpre.data(), inp.data(), w.data(), N, C, OC);
  // The bias gradient by hand, independent of the kernels' column ranges: each column's sum from
  // 0 over the rows in order, then added.
  for (int j = 0; j < OC; ++j) {
    float s = 0;
    for (int i = 0; i < N; ++i) s += dpre[static_cast<std::size_t>(i) * OC + j];
    ASSERT_EQ(bits(dbias[j]), bits(dbias0[j] + s)) << "matmul_backward's dbias " << j;
  }
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    std::vector<float> f_pre(n), f_act(n, NAN), f_sum(n, NAN), f_dpre(n, NAN), f_dbias = dbias0, product(n);
    matmul_forward(*mm, f_pre.data(), inp.data(), w.data(), nullptr, N, C, OC);
    product = f_pre;
    bias_gelu_forward(f_pre.data(), f_act.data(), bias.data(), N, OC);
    bias_residual_forward(f_sum.data(), res.data(), product.data(), bias.data(), N, OC);
    gelu_backward_bias(f_dpre.data(), f_dbias.data(), pre.data(), dact.data(), N, OC);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(bits(f_pre[i]), bits(pre[i])) << "bias_gelu_forward's kept input, element " << i << ", " << threads << " threads";
      ASSERT_EQ(bits(f_act[i]), bits(act[i])) << "bias_gelu_forward, element " << i << ", " << threads << " threads";
      ASSERT_EQ(bits(f_sum[i]), bits(sum[i])) << "bias_residual_forward, element " << i << ", " << threads << " threads";
      ASSERT_EQ(bits(f_dpre[i]), bits(dpre[i])) << "gelu_backward_bias's dinp, element " << i << ", " << threads << " threads";
    }
    for (int j = 0; j < OC; ++j) ASSERT_EQ(bits(f_dbias[j]), bits(dbias[j])) << "gelu_backward_bias's dbias " << j << ", " << threads << " threads";
  }
  // A null bias is the plain residual.
  std::vector<float> plain(n), fused(n, NAN);
  residual_forward(plain.data(), res.data(), act.data(), static_cast<std::int64_t>(n));
  bias_residual_forward(fused.data(), res.data(), act.data(), nullptr, N, OC);
  EXPECT_EQ(std::memcmp(plain.data(), fused.data(), n * sizeof(float)), 0);
}

// The cpu table's fused calls against the defaults every other table keeps (the separate kernels,
// registry.cpp), bit for bit: with f32 weights, and with bf16 weights where the table takes them
// (a CPU with bf16 products), with a bias and without one.
TEST(GptKernels, TableFusedCallsEqualTheirDefaults) {
  const int N = 37, C = 29, OC = 71;
  const std::size_t n = static_cast<std::size_t>(N) * OC;
  const auto inp = random_vector(static_cast<std::size_t>(N) * C, 41, 1.0f), w = random_vector(static_cast<std::size_t>(OC) * C, 42, 0.5f),
             bias = random_vector(OC, 43, 0.5f), res = random_vector(n, 44, 1.0f), dact = random_vector(n, 45, 1.0f);
  std::vector<std::uint16_t> w16(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) w16[i] = float_to_bf16(w[i]);
  for (Dtype operands : {Dtype::kF32, Dtype::kBf16}) {
    const auto k = make_gpt_kernels(GptCompute{"cpu", operands});
    if (operands == Dtype::kBf16 && !k->takes_bf16_weights()) continue;  // no bf16 products on this CPU
    const GptWeight wt = operands == Dtype::kBf16 ? GptWeight{nullptr, w16.data()} : GptWeight{w.data(), nullptr};
    for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
      SCOPED_TRACE(cat(operands == Dtype::kBf16 ? "bf16" : "f32", " weights, ", b ? "a bias" : "no bias"));
      // [0]: the cpu table's fused call; [1]: the default (the separate kernels)
      std::vector<float> pre[2], act[2], sum[2], scratch[2], dpre[2], dinp[2], dw[2], dbias[2];
      for (int d = 0; d < 2; ++d) {
        pre[d].assign(n, NAN), act[d].assign(n, NAN), sum[d].assign(n, NAN), scratch[d].assign(n, NAN), dpre[d].assign(n, NAN);
        dinp[d].assign(inp.size(), NAN), dw[d].assign(w.size(), 0.0f), dbias[d].assign(OC, 0.25f);
        float* db = b ? dbias[d].data() : nullptr;
        if (d == 0) {
          k->matmul_gelu_forward(pre[d].data(), act[d].data(), inp.data(), wt, b, N, C, OC);
          k->matmul_residual_forward(sum[d].data(), scratch[d].data(), res.data(), inp.data(), wt, b, N, C, OC);
          k->gelu_matmul_backward(dinp[d].data(), dw[d].data(), db, dpre[d].data(), pre[d].data(), dact.data(), inp.data(), wt, N, C, OC);
        } else {
          k->GptKernels::matmul_gelu_forward(pre[d].data(), act[d].data(), inp.data(), wt, b, N, C, OC);
          k->GptKernels::matmul_residual_forward(sum[d].data(), scratch[d].data(), res.data(), inp.data(), wt, b, N, C, OC);
          k->GptKernels::gelu_matmul_backward(dinp[d].data(), dw[d].data(), db, dpre[d].data(), pre[d].data(), dact.data(), inp.data(),
                                              wt, N, C, OC);
        }
      }
      const auto same = [](const std::vector<float>& x, const std::vector<float>& y) { return std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0; };
      EXPECT_TRUE(same(pre[0], pre[1])) << "matmul_gelu_forward's kept product";
      EXPECT_TRUE(same(act[0], act[1])) << "matmul_gelu_forward";
      EXPECT_TRUE(same(sum[0], sum[1])) << "matmul_residual_forward";
      EXPECT_TRUE(same(dpre[0], dpre[1]) && same(dinp[0], dinp[1]) && same(dw[0], dw[1]) && same(dbias[0], dbias[1]))
          << "gelu_matmul_backward";
    }
  }
}

// Every kernel of one block, forward and backward, with the given OpenMP threads. OpenBLAS runs
// one thread: its own results can depend on its thread count (its Haswell kernels, which
// OPENBLAS_CORETYPE=Haswell selects, round a partitioned matrix's edges differently), which is
// why a rank's OpenBLAS thread count is part of its configuration.
std::vector<float> block_outputs(int omp_threads) {
  omp_set_num_threads(omp_threads);
  const auto mm = make_matmul(MatmulKind::kOpenblasF32);
  const int B = 2, T = 130, C = 96, NH = 4, N = B * T;
  const std::size_t tt = static_cast<std::size_t>(B) * NH * T * T;
  const auto x = random_vector(static_cast<std::size_t>(N) * C, 9, 1.0f), w = random_vector(3 * C * C, 10, 0.2f),
             bias = random_vector(3 * C, 11, 0.1f), d3 = random_vector(static_cast<std::size_t>(N) * 3 * C, 12, 1.0f);
  std::vector<float> ln(x.size()), mean(N), rstd(N), qkv(static_cast<std::size_t>(N) * 3 * C), out(x.size());
  std::vector<float> pre(tt), att(tt), dpre(tt), datt(tt), dqkv(qkv.size()), dx(x.size(), 0.0f), dln(x.size());
  std::vector<float> dw(w.size(), 0.0f), dbias(3 * C, 0.0f), dlw(C, 0.0f), dlb(C, 0.0f), g(qkv.size()), dg(qkv.size());
  std::vector<float> dwte(10 * C, 0.0f), dwpe(static_cast<std::size_t>(T) * C, 0.0f);
  std::vector<std::int32_t> tokens(N);
  for (int i = 0; i < N; ++i) tokens[i] = (i * 7) % 10;
  layernorm_forward(ln.data(), mean.data(), rstd.data(), x.data(), w.data(), bias.data(), N, C);
  matmul_forward(*mm, qkv.data(), ln.data(), w.data(), bias.data(), N, C, 3 * C);
  attention_forward(*mm, out.data(), pre.data(), att.data(), qkv.data(), B, T, C, NH);
  gelu_forward(g.data(), qkv.data(), static_cast<std::int64_t>(qkv.size()));
  gelu_backward(dg.data(), qkv.data(), d3.data(), static_cast<std::int64_t>(qkv.size()));
  attention_backward(*mm, dqkv.data(), dpre.data(), datt.data(), x.data(), qkv.data(), att.data(), B, T, C, NH);
  matmul_backward(*mm, dln.data(), dw.data(), dbias.data(), dqkv.data(), ln.data(), w.data(), N, C, 3 * C);
  layernorm_backward(dx.data(), dlw.data(), dlb.data(), dln.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
  encoder_backward(dwte.data(), dwpe.data(), dx.data(), tokens.data(), B, T, C);
  std::vector<float> all;
  for (const auto* v : {&ln, &qkv, &out, &att, &g, &dg, &dqkv, &dln, &dw, &dbias, &dx, &dlw, &dlb, &dwte, &dwpe})
    all.insert(all.end(), v->begin(), v->end());
  return all;
}

TEST(GptKernels, BitsDoNotDependOnOpenMPThreads) {
  const int omp_before = omp_get_max_threads(), blas_before = openblas_get_num_threads();
  openblas_set_num_threads(1);
  const auto one = block_outputs(1);
  for (int threads : {2, 3, 4}) {
    const auto many = block_outputs(threads);
    ASSERT_EQ(one.size(), many.size());
    EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0) << threads << " OpenMP threads changed the bits";
  }
  omp_set_num_threads(omp_before);
  openblas_set_num_threads(blas_before);
}

}  // namespace
}  // namespace zero::gpt
