#include "cli/step_products.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <utility>

#include "partition/init.h"

namespace zero::cli {
namespace {

constexpr int kAttentionBlock = 64;  // gpt_kernels.cpp's query rows per block

void add_linear(std::vector<ProductShape>& out, int N, int in, int outc) {
  // gpt::matmul_forward / matmul_backward: out = inp wᵀ; dinp = dout w; dw += doutᵀ inp.
  out.push_back({ProductClass::kLinearForward, N, outc, in, false, true, in, in, outc, 1.0f, 0.0f, true});
  out.push_back({ProductClass::kLinearInputGradient, N, in, outc, false, false, outc, in, in, 1.0f, 0.0f, true});
  out.push_back({ProductClass::kLinearWeightGradient, outc, in, N, true, false, outc, in, in, 1.0f, 1.0f});
}

// One (sequence, head)'s attention products, as gpt::attention_forward and attention_backward
// run them: q, k, v rows 3C apart; att and preatt rows T apart; out and dout rows C apart.
void add_attention(std::vector<ProductShape>& out, int T, int C, int hs) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int i0 = 0; i0 < T; i0 += kAttentionBlock) {
    const int rows = std::min(kAttentionBlock, T - i0), keys = i0 + rows;
    const ProductShape scores{ProductClass::kAttention, rows, keys, hs, false, true, 3 * C, 3 * C, T, scale, 0.0f};
    const ProductShape mix{ProductClass::kAttention, rows, hs, keys, false, false, T, 3 * C, C, 1.0f, 0.0f};
    const ProductShape back{ProductClass::kAttention, rows, hs, T - i0, true, false, T, C, 3 * C, 1.0f, 0.0f};
    out.push_back(scores);  // forward: q kᵀ
    out.push_back(mix);     // forward: att v
    out.push_back(scores);  // backward: dout vᵀ
    out.push_back(mix);     // backward: dpre k
    out.push_back(back);    // backward: attᵀ dout into dv
    out.push_back(back);    // backward: dpreᵀ q into dk
  }
}

std::size_t stored(int rows_op, int cols_op, bool trans, int ld) {
  return static_cast<std::size_t>(trans ? cols_op : rows_op) * ld;
}

}  // namespace

std::vector<ProductShape> step_products(const GptShape& s, int micro_batch) {
  const int N = micro_batch * s.seq_len, C = s.channels;
  std::vector<ProductShape> out;
  for (int l = 0; l < s.layers; ++l) {
    for (const auto& [in, outc] : {std::pair{C, 3 * C}, std::pair{C, C}, std::pair{C, 4 * C}, std::pair{4 * C, C}}) {
      add_linear(out, N, in, outc);
    }
    for (int b = 0; b < micro_batch * s.heads; ++b) add_attention(out, s.seq_len, C, C / s.heads);
  }
  add_linear(out, N, C, s.vocab_size);  // the head, tied to the token embedding
  return out;
}

double total_flops(const std::vector<ProductShape>& products) {
  double f = 0;
  for (const ProductShape& p : products) f += p.flops();
  return f;
}

ProductOperands::ProductOperands(const std::vector<ProductShape>& products) {
  std::size_t na = 0, nb = 0, nc = 0;
  for (const ProductShape& s : products) {
    na = std::max(na, stored(s.M, s.K, s.ta, s.lda));
    nb = std::max(nb, stored(s.K, s.N, s.tb, s.ldb));
    nc = std::max(nc, static_cast<std::size_t>(s.M) * s.ldc);
  }
  a.resize(na);
  b.resize(nb);
  c.assign(nc, 0.0f);
  for (std::size_t i = 0; i < na; ++i) a[i] = static_cast<float>(counter_uniform(1, i) - 0.5);
  for (std::size_t i = 0; i < nb; ++i) b[i] = static_cast<float>(counter_uniform(2, i) - 0.5);
  b16.resize(nb);
  round_rows_to_bf16(b16.data(), b.data(), 1, static_cast<int>(nb), static_cast<int>(nb));
}

double run_products(Matmul& mm, const std::vector<ProductShape>& products, ProductOperands& o) {
  const auto t0 = std::chrono::steady_clock::now();
  for (const ProductShape& s : products) {
    const MatmulOperand b = s.b_is_weight && mm.kind() == MatmulKind::kOnednnBf16 ? MatmulOperand{nullptr, s.ldb, s.tb, o.b16.data()}
                                                                                  : MatmulOperand{o.b.data(), s.ldb, s.tb};
    mm.run(s.M, s.N, s.K, s.alpha, {o.a.data(), s.lda, s.ta}, b, s.beta, o.c.data(), s.ldc);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double time_products(Matmul& mm, const std::vector<ProductShape>& products, ProductOperands& o, int repeats) {
  run_products(mm, products, o);
  double best = 0;
  for (int pass = 1; pass <= repeats; ++pass) {
    const double t = run_products(mm, products, o);
    if (pass == 1 || t < best) best = t;
  }
  return best;
}

}  // namespace zero::cli
