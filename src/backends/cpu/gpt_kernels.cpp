#include "backends/cpu/gpt_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <omp.h>

#include "backends/cpu/vector_math.h"

// The hot loops below are compiled for AVX-512, AVX2 and the baseline, and the loader picks one
// for this CPU (GCC function multi-versioning). vector_math.h explains why all three give the same
// bits. Non-x86 builds get the baseline alone.
// (Not under ThreadSanitizer: the clones' resolver runs before the sanitizer's runtime starts.)
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define ZERO_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ZERO_VECTOR_CLONES
#endif

namespace zero::gpt {
namespace {

// encoder_backward runs over chunks of this many channels per thread.
constexpr int kChannelChunk = 64;
// Element-wise kernels run over spans of this many elements per thread.
constexpr std::int64_t kSpan = 16384;
// Row-wise passes (a bias, with what follows it) take this many rows per task.
constexpr int kRowBlock = 16;
// Attention products take query rows in blocks of this many (see attention_forward).
constexpr int kAttentionBlock = 64;

ZERO_VECTOR_CLONES void gelu_forward_span(float* out, const float* inp, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = gelu(inp[i]);
}

ZERO_VECTOR_CLONES void gelu_backward_span(float* dinp, const float* inp, const float* dout, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dinp[i] = gelu_derivative(inp[i]) * dout[i];
}

ZERO_VECTOR_CLONES void layernorm_row_forward(float* o, float* mean, float* rstd, const float* x, const float* w,
                                              const float* b, int C) {
  const float m = sum_lanes(x, C) / C;
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= C; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += (x[i + j] - m) * (x[i + j] - m);
  for (int j = 0; i + j < C; ++j) acc[j] += (x[i + j] - m) * (x[i + j] - m);
  const float s = 1.0f / std::sqrt(combine_sums(acc) / C + 1e-5f);
  for (i = 0; i < C; ++i) o[i] = (s * (x[i] - m)) * w[i] + b[i];
  *mean = m;
  *rstd = s;
}

ZERO_VECTOR_CLONES void layernorm_row_backward(float* dx, const float* d, const float* x, const float* w, float m, float s,
                                               int C) {
  // dnorm = w d, norm = (x - m) s; dx += (dnorm - mean(dnorm) - norm mean(dnorm norm)) s
  float acc1[kLanes] = {}, acc2[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= C; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const float dnorm = w[i + j] * d[i + j];
      acc1[j] += dnorm;
      acc2[j] += dnorm * ((x[i + j] - m) * s);
    }
  }
  for (int j = 0; i + j < C; ++j) {
    const float dnorm = w[i + j] * d[i + j];
    acc1[j] += dnorm;
    acc2[j] += dnorm * ((x[i + j] - m) * s);
  }
  const float dnorm_mean = combine_sums(acc1) / C, dnorm_norm_mean = combine_sums(acc2) / C;
  for (i = 0; i < C; ++i) dx[i] += (w[i] * d[i] - dnorm_mean - ((x[i] - m) * s) * dnorm_norm_mean) * s;
}

// sw[i - i0] += sum_n norm[n][i] d[n][i], sb[i - i0] += sum_n d[n][i] over channels [i0, i0 + n_ch),
// rows in order.
ZERO_VECTOR_CLONES void layernorm_params_columns(float* __restrict sw, float* __restrict sb, const float* dout, const float* inp,
                                                 const float* mean, const float* rstd, int N, int C, int i0, int n_ch) {
  for (int n = 0; n < N; ++n) {
    const float* d = dout + static_cast<std::int64_t>(n) * C + i0;
    const float* x = inp + static_cast<std::int64_t>(n) * C + i0;
    const float m = mean[n], s = rstd[n];
    for (int i = 0; i < n_ch; ++i) {
      sw[i] += ((x[i] - m) * s) * d[i];
      sb[i] += d[i];
    }
  }
}

// s[j - j0] += sum_n dout[n][j] over columns [j0, j0 + n_ch), rows in order.
ZERO_VECTOR_CLONES void column_sums_columns(float* __restrict s, const float* dout, int N, int OC, int j0, int n_ch) {
  for (int n = 0; n < N; ++n) {
    const float* d = dout + static_cast<std::int64_t>(n) * OC + j0;
    for (int j = 0; j < n_ch; ++j) s[j] += d[j];
  }
}

// Column range [first, first + count) of thread `part` of `parts` over OC columns: multiples of the
// 16 lanes, contiguous, so that a thread reads each row's part in one run.
void column_range(int part, int parts, int OC, int* first, int* count) {
  const int width = ((OC + parts - 1) / parts + 15) / 16 * 16;
  *first = std::min(OC, part * width);
  *count = std::min(OC, *first + width) - *first;
}

// Sums per column over the rows (parameter gradients), one contiguous range of columns per thread:
// add(j0, n, s1, s2) adds every row's terms of columns [j0, j0 + n), rows in order, into s1 and s2
// (n each, from zero), which then go into out1 (and out2, if given). Each column's sum is the same
// whatever the ranges, so the bits do not depend on the thread count; and a thread reads each
// row's range in one run, where 64-column chunks jumped a row per 256 bytes (the 50m model's qkv
// bias gradient, one thread: 0.61-0.72 -> 0.32-0.49 ms).
template <class Add>
void sums_by_column_range(int OC, float* out1, float* out2, Add add) {
#pragma omp parallel
  {
    int j0 = 0, n = 0;
    column_range(omp_get_thread_num(), omp_get_num_threads(), OC, &j0, &n);
    if (n > 0) {
      std::vector<float> s(2 * static_cast<std::size_t>(n), 0.0f);
      add(j0, n, s.data(), s.data() + n);
      for (int j = 0; j < n; ++j) out1[j0 + j] += s[j];
      if (out2 != nullptr)
        for (int j = 0; j < n; ++j) out2[j0 + j] += s[n + j];
    }
  }
}

ZERO_VECTOR_CLONES void bias_rows(float* out, const float* bias, int n_rows, int OC) {
  for (int n = 0; n < n_rows; ++n) {
    float* o = out + static_cast<std::int64_t>(n) * OC;
    for (int j = 0; j < OC; ++j) o[j] += bias[j];
  }
}

// out[n] += bias, act[n] = gelu(out[n]) for n_rows rows of OC.
ZERO_VECTOR_CLONES void bias_gelu_rows(float* __restrict out, float* __restrict act, const float* bias, int n_rows, int OC) {
  for (int n = 0; n < n_rows; ++n) {
    float* o = out + static_cast<std::int64_t>(n) * OC;
    float* a = act + static_cast<std::int64_t>(n) * OC;
    for (int j = 0; j < OC; ++j) {
      const float y = o[j] + bias[j];
      o[j] = y;
      a[j] = gelu(y);
    }
  }
}

// res_out[n] = res_in[n] + (out[n] + bias) for n_rows rows of OC.
ZERO_VECTOR_CLONES void bias_residual_rows(float* __restrict res_out, const float* res_in, const float* out, const float* bias,
                                           int n_rows, int OC) {
  for (int n = 0; n < n_rows; ++n) {
    const std::int64_t row = static_cast<std::int64_t>(n) * OC;
    for (int j = 0; j < OC; ++j) res_out[row + j] = res_in[row + j] + (out[row + j] + bias[j]);
  }
}

// Columns [j0, j0 + n_ch) of every row in order: dinp = gelu'(inp) dout, s[j - j0] += dinp.
ZERO_VECTOR_CLONES void gelu_backward_bias_columns(float* __restrict dinp, float* __restrict s, const float* inp,
                                                   const float* dout, int N, int OC, int j0, int n_ch) {
  for (int n = 0; n < N; ++n) {
    const std::int64_t row = static_cast<std::int64_t>(n) * OC + j0;
    for (int j = 0; j < n_ch; ++j) {
      const float g = gelu_derivative(inp[row + j]) * dout[row + j];
      dinp[row + j] = g;
      s[j] += g;
    }
  }
}

// In place: a[0..n) = softmax(a[0..n)), a[n..end) = 0: query t = n - 1 sees keys 0..t.
ZERO_VECTOR_CLONES void softmax_causal_row(float* a, int n, int end) {
  const float maxv = max_lanes(a, n);
  for (int i = 0; i < n; ++i) a[i] = exp_approx(a[i] - maxv);
  const float sum = sum_lanes(a, n);
  const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
  for (int i = 0; i < n; ++i) a[i] *= inv;
  for (int i = n; i < end; ++i) a[i] = 0.0f;
}

// In place, d = datt on entry: d[i] = a[i] (d[i] - sum_j a[j] d[j]) for i < n, 0 in [n, end).
ZERO_VECTOR_CLONES void softmax_causal_row_backward(float* d, const float* a, int n, int end) {
  const float dot = dot_lanes(a, d, n);
  for (int i = 0; i < n; ++i) d[i] = a[i] * (d[i] - dot);
  for (int i = n; i < end; ++i) d[i] = 0.0f;
}

}  // namespace

void encoder_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe, int B, int T, int C) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      float* o = out + (static_cast<std::int64_t>(b) * T + t) * C;
      const float* e = wte + static_cast<std::int64_t>(tokens[b * T + t]) * C;
      const float* p = wpe + static_cast<std::int64_t>(t) * C;
      for (int i = 0; i < C; ++i) o[i] = e[i] + p[i];
    }
  }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, int B, int T, int C) {
  // Parallel over chunks of channels: every thread visits the positions in the same order, so a
  // token that appears twice gets its contributions added in a fixed order; rows outermost keeps
  // the reads contiguous.
  const int chunks = (C + kChannelChunk - 1) / kChannelChunk;
#pragma omp parallel for schedule(static)
  for (int c = 0; c < chunks; ++c) {
    const int i0 = c * kChannelChunk, i1 = std::min(C, i0 + kChannelChunk);
    for (int b = 0; b < B; ++b) {
      for (int t = 0; t < T; ++t) {
        const float* d = dout + (static_cast<std::int64_t>(b) * T + t) * C;
        float* e = dwte + static_cast<std::int64_t>(tokens[b * T + t]) * C;
        float* p = dwpe + static_cast<std::int64_t>(t) * C;
        for (int i = i0; i < i1; ++i) {
          e[i] += d[i];
          p[i] += d[i];
        }
      }
    }
  }
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int N, int C) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const std::int64_t row = static_cast<std::int64_t>(n) * C;
    layernorm_row_forward(out + row, mean + n, rstd + n, inp + row, w, b, C);
  }
}

void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int N, int C) {
  // Parameter gradients: each channel's sum over the rows in order.
  sums_by_column_range(C, dw, db, [&](int i0, int n, float* sw, float* sb) {
    layernorm_params_columns(sw, sb, dout, inp, mean, rstd, N, C, i0, n);
  });
  // Input gradient: one row per thread.
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const std::int64_t row = static_cast<std::int64_t>(n) * C;
    layernorm_row_backward(dinp + row, dout + row, inp + row, w, mean[n], rstd[n], C);
  }
}

namespace {

// out (N,OC) = inp (N,C) @ op(w)^T + bias; w (OC,C), f32 or bf16 (MatmulOperand).
void linear_forward(Matmul& mm, float* out, const float* inp, MatmulOperand w, const float* bias, int N, int C, int OC) {
  mm.run(N, OC, C, 1.0f, {inp, C, false}, w, 0.0f, out, OC);
  if (bias == nullptr) return;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n += kRowBlock) {
    bias_rows(out + static_cast<std::int64_t>(n) * OC, bias, std::min(kRowBlock, N - n), OC);
  }
}

// w: (OC,C) as stored, untransposed (the input gradient's dout @ w).
void linear_backward(Matmul& mm, float* dinp, float* dw, float* dbias, const float* dout, const float* inp, MatmulOperand w,
                     int N, int C, int OC) {
  mm.run(N, C, OC, 1.0f, {dout, OC, false}, w, 0.0f, dinp, C);
  mm.run(OC, C, N, 1.0f, {dout, OC, true}, {inp, C, false}, 1.0f, dw, C);
  if (dbias == nullptr) return;
  sums_by_column_range(OC, dbias, nullptr, [&](int j0, int n, float* s, float*) { column_sums_columns(s, dout, N, OC, j0, n); });
}

}  // namespace

void matmul_forward(Matmul& mm, float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) {
  linear_forward(mm, out, inp, {w, C, true}, bias, N, C, OC);
}

void matmul_forward(Matmul& mm, float* out, const float* inp, const std::uint16_t* w, const float* bias, int N, int C, int OC) {
  linear_forward(mm, out, inp, {nullptr, C, true, w}, bias, N, C, OC);
}

void matmul_backward(Matmul& mm, float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w,
                     int N, int C, int OC) {
  linear_backward(mm, dinp, dw, dbias, dout, inp, {w, C, false}, N, C, OC);
}

void matmul_backward(Matmul& mm, float* dinp, float* dw, float* dbias, const float* dout, const float* inp,
                     const std::uint16_t* w, int N, int C, int OC) {
  linear_backward(mm, dinp, dw, dbias, dout, inp, {nullptr, C, false, w}, N, C, OC);
}

namespace {

// Rows of a block at least this many elements in all are spread over the OpenMP threads.
constexpr std::int64_t kParallelBlock = 4096;

// Query rows [t0, t0 + m) of one head, their scores in a (rows T apart, keys [0, t0 + m) written):
// each row's softmax in place, zeros up to `end`.
void softmax_block(float* a, int t0, int m, int T, int end) {
#pragma omp parallel for schedule(static) if (static_cast<std::int64_t>(m) * (t0 + m) >= kParallelBlock)
  for (int r = 0; r < m; ++r) softmax_causal_row(a + static_cast<std::int64_t>(r) * T, t0 + r + 1, end);
}

// d (rows T apart) holds datt for query rows [t0, t0 + m), keys [0, t0 + m): dpre in place.
void softmax_backward_block(float* d, const float* a, int t0, int m, int T) {
#pragma omp parallel for schedule(static) if (static_cast<std::int64_t>(m) * (t0 + m) >= kParallelBlock)
  for (int r = 0; r < m; ++r) {
    const std::int64_t row = static_cast<std::int64_t>(r) * T;
    softmax_causal_row_backward(d + row, a + row, t0 + r + 1, t0 + m);
  }
}

}  // namespace

// Causal attention as matrix products per (batch, head), through the given Matmul (the cpu table
// gives OpenBLAS's f32 in every run: matmul.h). Query rows are taken in blocks of kAttentionBlock,
// and a block's products stop at its last key, so they skip most of the masked upper triangle (at
// T = 4 blocks, 5/8 of the full T x T work). Each block's softmax (and in backward its gradient)
// runs in place right after the product that wrote it, while the block is in cache, and the next
// product reads it from there: one pass over att instead of three separate ones over preatt, att
// and datt (the CPU writes neither preatt nor dpreatt). The masked entries inside a diagonal block
// are zeroed before a product reads them.
//
// The products run outside OpenMP regions (oneDNN takes the calling thread's OpenMP threads); a
// block's rows are spread over the threads between them.
void attention_forward(Matmul& mm, float* out, float*, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::int64_t TT = static_cast<std::int64_t>(T) * T, C3 = 3 * static_cast<std::int64_t>(C);
  const int ld3 = 3 * C;  // qkv's rows
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const float* q = qkv + b * T * C3 + h * hs;  // k = q + C, v = q + 2C
      float* a = att + (static_cast<std::int64_t>(b) * NH + h) * TT;
      float* o = out + static_cast<std::int64_t>(b) * T * C + h * hs;
      for (int i0 = 0; i0 < T; i0 += kAttentionBlock) {
        const int m = std::min(kAttentionBlock, T - i0);
        float* ai = a + static_cast<std::int64_t>(i0) * T;
        // scores = scale q k^T: query rows [i0, i0 + m) against keys [0, i0 + m); then att; out = att v
        mm.run(m, i0 + m, hs, scale, {q + i0 * C3, ld3, false}, {q + C, ld3, true}, 0.0f, ai, T);
        softmax_block(ai, i0, m, T, T);
        mm.run(m, hs, i0 + m, 1.0f, {ai, T, false}, {q + 2 * C, ld3, false}, 0.0f, o + static_cast<std::int64_t>(i0) * C, C);
      }
    }
  }
}

// Blocks from the last: dk's block i0 sums over the queries t >= i0, whose dpre rows are then done.
void attention_backward(Matmul& mm, float* dqkv, float*, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::int64_t TT = static_cast<std::int64_t>(T) * T, C3 = 3 * static_cast<std::int64_t>(C);
  const int ld3 = 3 * C;  // qkv's rows
  if (T <= 0) return;  // no rows (the block loop below would run once, empty)
  const int last = (T - 1) / kAttentionBlock * kAttentionBlock;
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const float* q = qkv + b * T * C3 + h * hs;  // k = q + C, v = q + 2C
      float* dq = dqkv + b * T * C3 + h * hs;      // dk = dq + C, dv = dq + 2C
      const float* d = dout + static_cast<std::int64_t>(b) * T * C + h * hs;
      const float* a = att + (static_cast<std::int64_t>(b) * NH + h) * TT;
      float* dp = datt + (static_cast<std::int64_t>(b) * NH + h) * TT;  // datt, then dpre in place
      for (int i0 = last; i0 >= 0; i0 -= kAttentionBlock) {
        const int m = std::min(kAttentionBlock, T - i0);
        const std::int64_t di = static_cast<std::int64_t>(i0) * C, ri = static_cast<std::int64_t>(i0) * T;
        // datt = dout v^T (query rows [i0, i0 + m) against keys [0, i0 + m)), then dpre
        mm.run(m, i0 + m, hs, 1.0f, {d + di, C, false}, {q + 2 * C, ld3, true}, 0.0f, dp + ri, T);
        softmax_backward_block(dp + ri, a + ri, i0, m, T);
        // dv = att^T dout (key rows [i0, i0 + m), summed over the queries t >= i0 that see them)
        mm.run(m, hs, T - i0, 1.0f, {a + ri + i0, T, true}, {d + di, C, false}, 0.0f, dq + 2 * C + i0 * C3, ld3);
        // pre = scale q k^T: dq = scale dpre k (keys [0, i0 + m)); dk = scale dpre^T q (queries t >= i0)
        mm.run(m, hs, i0 + m, scale, {dp + ri, T, false}, {q + C, ld3, false}, 0.0f, dq + i0 * C3, ld3);
        mm.run(m, hs, T - i0, scale, {dp + ri + i0, T, true}, {q + i0 * C3, ld3, false}, 0.0f, dq + C + i0 * C3, ld3);
      }
    }
  }
}

void gelu_forward(float* out, const float* inp, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; i += kSpan) gelu_forward_span(out + i, inp + i, std::min(kSpan, n - i));
}

void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; i += kSpan) gelu_backward_span(dinp + i, inp + i, dout + i, std::min(kSpan, n - i));
}

void residual_forward(float* out, const float* a, const float* b, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void bias_gelu_forward(float* out, float* act, const float* bias, int N, int OC) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n += kRowBlock) {
    const std::int64_t row = static_cast<std::int64_t>(n) * OC;
    bias_gelu_rows(out + row, act + row, bias, std::min(kRowBlock, N - n), OC);
  }
}

void bias_residual_forward(float* res_out, const float* res_in, const float* out, const float* bias, int N, int OC) {
  if (bias == nullptr) return residual_forward(res_out, res_in, out, static_cast<std::int64_t>(N) * OC);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n += kRowBlock) {
    const std::int64_t row = static_cast<std::int64_t>(n) * OC;
    bias_residual_rows(res_out + row, res_in + row, out + row, bias, std::min(kRowBlock, N - n), OC);
  }
}

void gelu_backward_bias(float* dinp, float* dbias, const float* inp, const float* dout, int N, int OC) {
  sums_by_column_range(OC, dbias, nullptr, [&](int j0, int n, float* s, float*) {
    gelu_backward_bias_columns(dinp, s, inp, dout, N, OC, j0, n);
  });
}

float softmax_crossentropy_forward(float* probs, float* losses, const float* logits, const std::int32_t* targets, int N,
                                   int V) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = logits + static_cast<std::int64_t>(n) * V;
    float* p = probs + static_cast<std::int64_t>(n) * V;
    float maxv = -INFINITY;
    for (int i = 0; i < V; ++i) maxv = x[i] > maxv ? x[i] : maxv;
    double sum = 0.0;
    for (int i = 0; i < V; ++i) {
      p[i] = std::exp(x[i] - maxv);
      sum += p[i];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int i = 0; i < V; ++i) p[i] *= inv;
    losses[n] = -std::log(p[targets[n]]);
  }
  double total = 0.0;  // in order, in double: the loss the user reads
  for (int n = 0; n < N; ++n) total += losses[n];
  return static_cast<float>(total / N);
}

void softmax_crossentropy_backward(float* dlogits, const float* probs, const std::int32_t* targets, int N, int V) {
  const float inv_n = 1.0f / static_cast<float>(N);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* p = probs + static_cast<std::int64_t>(n) * V;
    float* d = dlogits + static_cast<std::int64_t>(n) * V;
    for (int i = 0; i < V; ++i) d[i] = (p[i] - (i == targets[n] ? 1.0f : 0.0f)) * inv_n;
  }
}

}  // namespace zero::gpt
