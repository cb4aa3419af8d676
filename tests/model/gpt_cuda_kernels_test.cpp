// Each of the GPT's CUDA kernels against its CPU kernel (the oracle), over a sweep of shapes:
// sizes of 1, odd sizes, T past the CPU's attention block of 64, C not a multiple of 32 (a warp)
// nor of 64 (the CPU's channel chunk), more rows than a block. Skipped without a GPU.
//
// Tolerances, as max |gpu - cpu| / max |cpu| per output tensor (normalized_error):
//   0 (the same bits): the element-wise kernels with the same formula (encoder, residual,
//     cross-entropy's backward) and the per-channel reductions, which add in the CPU's order
//     with no FMA contraction (encoder's dwte/dwpe, LayerNorm's dw/db, the bias gradient).
//   1e-5: row reductions in another order (LayerNorm, softmax: a warp's tree against 16 lanes;
//     a sum of C terms in f32 moves by ~log2(C) ulp) and libm's expf/tanhf against the CPU's
//     polynomials (2 ulp, vector_math.h), well above both and far below a wrong index (~1).
//   1e-4: f32 matrix products (cuBLAS and OpenBLAS order a K-term dot product differently: up
//     to K ulp worst case, sqrt(K) ulp typical; K <= 260 here).
//   2e-2: products with bf16 operands (each operand rounded to 8 bits of mantissa: 2^-9 relative
//     each, so ~2^-8 on a product, accumulated in f32).
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_support.h"
#include "memory/ledger.h"

namespace zero {
namespace {

using test::normalized_error;
using test::random_vector;
using test::same_bits;
using test::TableTensor;

constexpr double kRow = 1e-5, kProduct = 1e-4, kBf16Product = 2e-2;

struct Tables {
  Ledger ledger;
  std::unique_ptr<GptKernels> cpu = make_gpt_kernels({"cpu", Dtype::kF32});
  std::unique_ptr<GptKernels> gpu = make_gpt_kernels({"cuda", Dtype::kF32});
  TableTensor on_gpu(const std::vector<float>& v) { return TableTensor(*gpu, ledger, v); }
};

std::vector<std::int32_t> random_tokens(std::size_t n, int V, std::uint64_t key) {
  std::vector<std::int32_t> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<std::int32_t>(counter_uniform(key, i) * V);
  return t;
}

TEST(GptCudaKernels, Encoder) {
  for (auto [B, T, C, V] : std::vector<std::array<int, 4>>{{1, 1, 1, 1}, {2, 7, 33, 3}, {3, 70, 65, 11}}) {
    SCOPED_TRACE(testing::Message() << "B " << B << " T " << T << " C " << C << " V " << V);
    Tables k;
    const std::size_t BT = static_cast<std::size_t>(B) * T;
    const auto in = random_tokens(BT, V, 1), tg = random_tokens(BT, V, 2);  // V small: tokens repeat
    const auto wte = random_vector(static_cast<std::size_t>(V) * C, 3, 1), wpe = random_vector(static_cast<std::size_t>(T) * C, 4, 1);
    const auto dout = random_vector(BT * C, 5, 1);
    std::vector<float> out(BT * C), dwte = random_vector(wte.size(), 6, 1), dwpe = random_vector(wpe.size(), 7, 1);
    const auto dwte0 = dwte, dwpe0 = dwpe;
    k.cpu->encoder_forward(out.data(), in.data(), wte.data(), wpe.data(), B, T, C);
    k.cpu->encoder_backward(dwte.data(), dwpe.data(), dout.data(), in.data(), B, T, C);
    const GptKernels::Tokens tok = k.gpu->upload_tokens(in.data(), tg.data(), BT);
    TableTensor g_out = k.on_gpu(out), g_wte = k.on_gpu(wte), g_wpe = k.on_gpu(wpe), g_dout = k.on_gpu(dout);
    TableTensor g_dwte = k.on_gpu(dwte0), g_dwpe = k.on_gpu(dwpe0);
    k.gpu->encoder_forward(g_out.get(), tok.inputs, g_wte.get(), g_wpe.get(), B, T, C);
    k.gpu->encoder_backward(g_dwte.get(), g_dwpe.get(), g_dout.get(), tok.inputs, B, T, C);
    EXPECT_TRUE(same_bits(g_out.host(), out));
    EXPECT_TRUE(same_bits(g_dwte.host(), dwte));
    EXPECT_TRUE(same_bits(g_dwpe.host(), dwpe));
  }
}

TEST(GptCudaKernels, LayerNorm) {
  for (auto [N, C] : std::vector<std::array<int, 2>>{{1, 1}, {5, 31}, {9, 33}, {130, 97}, {17, 768}}) {
    SCOPED_TRACE(testing::Message() << "N " << N << " C " << C);
    Tables k;
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    const auto x = random_vector(NC, 1, 3), w = random_vector(C, 2, 1), b = random_vector(C, 3, 1), d = random_vector(NC, 4, 1);
    std::vector<float> out(NC), mean(N), rstd(N), dx = random_vector(NC, 5, 1), dw = random_vector(C, 6, 1), db = random_vector(C, 7, 1);
    TableTensor g_out = k.on_gpu(out), g_mean = k.on_gpu(mean), g_rstd = k.on_gpu(rstd), g_x = k.on_gpu(x), g_w = k.on_gpu(w),
                g_b = k.on_gpu(b), g_d = k.on_gpu(d), g_dx = k.on_gpu(dx), g_dw = k.on_gpu(dw), g_db = k.on_gpu(db);
    k.cpu->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    k.gpu->layernorm_forward(g_out.get(), g_mean.get(), g_rstd.get(), g_x.get(), g_w.get(), g_b.get(), N, C);
    EXPECT_LE(normalized_error(g_out.host(), out), kRow);
    EXPECT_LE(normalized_error(g_mean.host(), mean), kRow);
    EXPECT_LE(normalized_error(g_rstd.host(), rstd), kRow);
    // Backward from the CPU's mean and rstd on both, so dw and db see the same inputs.
    TableTensor g_mean_cpu = k.on_gpu(mean), g_rstd_cpu = k.on_gpu(rstd);
    k.cpu->layernorm_backward(dx.data(), dw.data(), db.data(), d.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
    k.gpu->layernorm_backward(g_dx.get(), g_dw.get(), g_db.get(), g_d.get(), g_x.get(), g_w.get(), g_mean_cpu.get(),
                              g_rstd_cpu.get(), N, C);
    EXPECT_LE(normalized_error(g_dx.host(), dx), kRow);
    EXPECT_TRUE(same_bits(g_dw.host(), dw));
    EXPECT_TRUE(same_bits(g_db.host(), db));
  }
}

void check_matmul(Dtype operands, int N, int C, int OC, bool bias) {
  SCOPED_TRACE(testing::Message() << dtype_label(operands) << " N " << N << " C " << C << " OC " << OC << (bias ? " bias" : ""));
  Tables k;
  k.gpu = make_gpt_kernels({"cuda", operands});
  const double tol = operands == Dtype::kBf16 ? kBf16Product : kProduct;
  const auto x = random_vector(static_cast<std::size_t>(N) * C, 1, 1), w = random_vector(static_cast<std::size_t>(OC) * C, 2, 1);
  const auto b = random_vector(OC, 3, 1), d = random_vector(static_cast<std::size_t>(N) * OC, 4, 1);
  std::vector<float> out(static_cast<std::size_t>(N) * OC), dx(x.size()), dw = random_vector(w.size(), 5, 1), db = random_vector(OC, 6, 1);
  TableTensor g_out = k.on_gpu(out), g_x = k.on_gpu(x), g_w = k.on_gpu(w), g_b = k.on_gpu(b), g_d = k.on_gpu(d),
              g_dx = k.on_gpu(dx), g_dw = k.on_gpu(dw), g_db = k.on_gpu(db);
  k.cpu->matmul_forward(out.data(), x.data(), w.data(), bias ? b.data() : nullptr, N, C, OC);
  k.gpu->matmul_forward(g_out.get(), g_x.get(), g_w.get(), bias ? g_b.get() : nullptr, N, C, OC);
  EXPECT_LE(normalized_error(g_out.host(), out), tol);
  k.cpu->matmul_backward(dx.data(), dw.data(), bias ? db.data() : nullptr, d.data(), x.data(), w.data(), N, C, OC);
  k.gpu->matmul_backward(g_dx.get(), g_dw.get(), bias ? g_db.get() : nullptr, g_d.get(), g_x.get(), g_w.get(), N, C, OC);
  EXPECT_LE(normalized_error(g_dx.host(), dx), tol);
  EXPECT_LE(normalized_error(g_dw.host(), dw), tol);  // dw += : the accumulation is checked too
  EXPECT_TRUE(same_bits(g_db.host(), db));             // the bias gradient is f32 in both
}

TEST(GptCudaKernels, MatmulF32AndBf16Operands) {
  for (Dtype t : {Dtype::kF32, Dtype::kBf16}) {
    for (auto [N, C, OC] : std::vector<std::array<int, 3>>{{1, 1, 1}, {7, 33, 65}, {130, 48, 17}, {64, 260, 96}}) {
      check_matmul(t, N, C, OC, true);
      check_matmul(t, N, C, OC, false);
    }
  }
}

TEST(GptCudaKernels, CausalAttention) {
  for (auto [B, T, C, NH] : std::vector<std::array<int, 4>>{{1, 1, 4, 1}, {2, 7, 12, 3}, {1, 70, 32, 2}, {2, 65, 24, 4}}) {
    SCOPED_TRACE(testing::Message() << "B " << B << " T " << T << " C " << C << " NH " << NH);
    Tables k;
    const std::size_t BTC = static_cast<std::size_t>(B) * T * C, att = static_cast<std::size_t>(B) * NH * T * T;
    const auto qkv = random_vector(3 * BTC, 1, 2), dout = random_vector(BTC, 2, 1);
    std::vector<float> out(BTC), preatt(att), a(att), dqkv(3 * BTC), dpre(att), da(att);
    TableTensor g_out = k.on_gpu(out), g_pre = k.on_gpu(preatt), g_a = k.on_gpu(a), g_qkv = k.on_gpu(qkv), g_dout = k.on_gpu(dout),
                g_dqkv = k.on_gpu(dqkv), g_dpre = k.on_gpu(dpre), g_da = k.on_gpu(da);
    k.cpu->attention_forward(out.data(), preatt.data(), a.data(), qkv.data(), B, T, C, NH);
    k.gpu->attention_forward(g_out.get(), g_pre.get(), g_a.get(), g_qkv.get(), B, T, C, NH);
    EXPECT_LE(normalized_error(g_a.host(), a), kProduct);  // upper triangle: 0 in both
    EXPECT_LE(normalized_error(g_out.host(), out), kProduct);
    k.cpu->attention_backward(dqkv.data(), dpre.data(), da.data(), dout.data(), qkv.data(), a.data(), B, T, C, NH);
    k.gpu->attention_backward(g_dqkv.get(), g_dpre.get(), g_da.get(), g_dout.get(), g_qkv.get(), g_a.get(), B, T, C, NH);
    EXPECT_LE(normalized_error(g_dqkv.host(), dqkv), kProduct);
  }
}

TEST(GptCudaKernels, GeluAndResidual) {
  for (std::int64_t n : {1, 1000, 65537}) {
    SCOPED_TRACE(testing::Message() << "n " << n);
    Tables k;
    const std::size_t un = static_cast<std::size_t>(n);
    const auto x = random_vector(un, 1, 6), y = random_vector(un, 2, 1);  // x in [-6, 6]: both tails of tanh
    std::vector<float> out(un), dx(un), sum(un);
    TableTensor g_out = k.on_gpu(out), g_dx = k.on_gpu(dx), g_sum = k.on_gpu(sum), g_x = k.on_gpu(x), g_y = k.on_gpu(y);
    k.cpu->gelu_forward(out.data(), x.data(), n);
    k.cpu->gelu_backward(dx.data(), x.data(), y.data(), n);
    k.cpu->residual_forward(sum.data(), x.data(), y.data(), n);
    k.gpu->gelu_forward(g_out.get(), g_x.get(), n);
    k.gpu->gelu_backward(g_dx.get(), g_x.get(), g_y.get(), n);
    k.gpu->residual_forward(g_sum.get(), g_x.get(), g_y.get(), n);
    EXPECT_LE(normalized_error(g_out.host(), out), kRow);
    EXPECT_LE(normalized_error(g_dx.host(), dx), kRow);
    EXPECT_TRUE(same_bits(g_sum.host(), sum));
  }
}

TEST(GptCudaKernels, SoftmaxCrossEntropy) {
  for (auto [N, V] : std::vector<std::array<int, 2>>{{1, 1}, {3, 7}, {5, 257}, {2, 50257}}) {
    SCOPED_TRACE(testing::Message() << "N " << N << " V " << V);
    Tables k;
    const std::size_t NV = static_cast<std::size_t>(N) * V;
    const auto logits = random_vector(NV, 1, 8);
    const auto tgt = random_tokens(static_cast<std::size_t>(N), V, 2);
    std::vector<float> probs(NV), losses(N), dlogits(NV);
    const float loss = k.cpu->softmax_crossentropy_forward(probs.data(), losses.data(), logits.data(), tgt.data(), N, V);
    k.cpu->softmax_crossentropy_backward(dlogits.data(), probs.data(), tgt.data(), N, V);
    const GptKernels::Tokens tok = k.gpu->upload_tokens(tgt.data(), tgt.data(), tgt.size());
    TableTensor g_probs = k.on_gpu(probs), g_losses = k.on_gpu(losses), g_logits = k.on_gpu(logits), g_d = k.on_gpu(dlogits);
    const float g_loss = k.gpu->softmax_crossentropy_forward(g_probs.get(), g_losses.get(), g_logits.get(), tok.targets, N, V);
    EXPECT_NEAR(g_loss, loss, kRow * std::max(1.0f, std::abs(loss)));
    EXPECT_LE(normalized_error(g_probs.host(), probs), kRow);
    EXPECT_LE(normalized_error(g_losses.host(), losses), kRow);
    // The backward from the CPU's probs: the same formula, so the same bits.
    TableTensor g_probs_cpu = k.on_gpu(probs);
    k.gpu->softmax_crossentropy_backward(g_d.get(), g_probs_cpu.get(), tok.targets, N, V);
    EXPECT_TRUE(same_bits(g_d.host(), dlogits));
  }
}

}  // namespace
}  // namespace zero

int main(int argc, char** argv) { return zero::test::run_gpu_tests(argc, argv); }
