#include "backends/cpu/llama_kernels.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/vector_math.h"

namespace zero::llama {
namespace {

// Column reductions (parameter gradients) run over chunks of this many channels per thread.
constexpr int kChannelChunk = 64;

// silu(g) = g sigmoid(g). exp_approx, not libm: the same bits on every machine (vector_math.h).
inline float sigmoid(float g) { return 1.0f / (1.0f + gpt::exp_approx(-g)); }

// Rotates one head's pairs (i, i + hd/2) by the angles of one position: x*cos + rotate_half(x)*sin,
// rotate_half(x) = (-x[hd/2:], x[:hd/2]). sign -1 rotates back (the transpose, for backward).
inline void rotate(float* out, const float* x, const float* c, const float* s, int half, float sign) {
  for (int i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    out[i] = a * c[i] - sign * (b * s[i]);
    out[i + half] = b * c[i] + sign * (a * s[i]);
  }
}

}  // namespace

void embedding_forward(float* out, const std::int32_t* tokens, const float* wte, int N, int C) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    std::copy_n(wte + static_cast<std::int64_t>(tokens[n]) * C, C, out + static_cast<std::int64_t>(n) * C);
  }
}

void embedding_backward(float* dwte, const float* dout, const std::int32_t* tokens, int N, int C) {
  // Chunks of channels per thread, rows in order: a token seen twice gets its rows added in order.
  const int chunks = (C + kChannelChunk - 1) / kChannelChunk;
#pragma omp parallel for schedule(static)
  for (int c = 0; c < chunks; ++c) {
    const int i0 = c * kChannelChunk, i1 = std::min(C, i0 + kChannelChunk);
    for (int n = 0; n < N; ++n) {
      const float* d = dout + static_cast<std::int64_t>(n) * C;
      float* e = dwte + static_cast<std::int64_t>(tokens[n]) * C;
      for (int i = i0; i < i1; ++i) e[i] += d[i];
    }
  }
}

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, float eps, int N, int C) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<std::int64_t>(n) * C;
    float* o = out + static_cast<std::int64_t>(n) * C;
    float ss = 0.0f;
    for (int i = 0; i < C; ++i) ss += x[i] * x[i];
    const float s = 1.0f / std::sqrt(ss / static_cast<float>(C) + eps);
    for (int i = 0; i < C; ++i) o[i] = (x[i] * s) * w[i];
    rstd[n] = s;
  }
}

void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, const float* rstd, int N,
                      int C) {
  // dw[i] += sum_n x[n][i] rstd[n] d[n][i]: chunks of channels per thread, rows in order.
  const int chunks = (C + kChannelChunk - 1) / kChannelChunk;
#pragma omp parallel for schedule(static)
  for (int c = 0; c < chunks; ++c) {
    const int i0 = c * kChannelChunk, i1 = std::min(C, i0 + kChannelChunk);
    for (int n = 0; n < N; ++n) {
      const float* x = inp + static_cast<std::int64_t>(n) * C;
      const float* d = dout + static_cast<std::int64_t>(n) * C;
      for (int i = i0; i < i1; ++i) dw[i] += (x[i] * rstd[n]) * d[i];
    }
  }
  // y = w x s, s = (mean(x^2) + eps)^-1/2: dx = s (w d) - x s^3 mean(w d x)
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const std::int64_t row = static_cast<std::int64_t>(n) * C;
    const float *x = inp + row, *d = dout + row;
    const float s = rstd[n];
    float dot = 0.0f;
    for (int i = 0; i < C; ++i) dot += (w[i] * d[i]) * x[i];
    const float k = (dot / static_cast<float>(C)) * (s * s * s);
    for (int i = 0; i < C; ++i) dinp[row + i] += (w[i] * d[i]) * s - x[i] * k;
  }
}

void rope_pack_forward(float* qkv, const float* q, const float* k, const float* v, const float* cos, const float* sin,
                       int N, int T, int NH, int NKV, int hd) {
  const int C = NH * hd, KV = NKV * hd, rep = NH / NKV, half = hd / 2;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* c = cos + static_cast<std::int64_t>(n % T) * half;
    const float* s = sin + static_cast<std::int64_t>(n % T) * half;
    float* row = qkv + static_cast<std::int64_t>(n) * 3 * C;
    const float* qn = q + static_cast<std::int64_t>(n) * C;
    const float* kn = k + static_cast<std::int64_t>(n) * KV;
    const float* vn = v + static_cast<std::int64_t>(n) * KV;
    for (int h = 0; h < NH; ++h) {
      const int g = h / rep;  // the key/value head query head h reads
      rotate(row + h * hd, qn + h * hd, c, s, half, 1.0f);
      rotate(row + C + h * hd, kn + g * hd, c, s, half, 1.0f);
      std::copy_n(vn + g * hd, hd, row + 2 * C + h * hd);
    }
  }
}

void rope_pack_backward(float* dq, float* dk, float* dv, const float* dqkv, const float* cos, const float* sin, int N,
                        int T, int NH, int NKV, int hd) {
  const int C = NH * hd, KV = NKV * hd, rep = NH / NKV, half = hd / 2;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* c = cos + static_cast<std::int64_t>(n % T) * half;
    const float* s = sin + static_cast<std::int64_t>(n % T) * half;
    const float* row = dqkv + static_cast<std::int64_t>(n) * 3 * C;
    float* dqn = dq + static_cast<std::int64_t>(n) * C;
    float* dkn = dk + static_cast<std::int64_t>(n) * KV;
    float* dvn = dv + static_cast<std::int64_t>(n) * KV;
    std::fill_n(dkn, KV, 0.0f);
    std::fill_n(dvn, KV, 0.0f);
    float tmp[2 * 512];  // one head's rotated-back gradient (hd <= 1024: LlamaShape::validate)
    for (int h = 0; h < NH; ++h) {
      const int g = h / rep;
      rotate(dqn + h * hd, row + h * hd, c, s, half, -1.0f);
      rotate(tmp, row + C + h * hd, c, s, half, -1.0f);
      for (int i = 0; i < hd; ++i) dkn[g * hd + i] += tmp[i];
      for (int i = 0; i < hd; ++i) dvn[g * hd + i] += row[2 * C + h * hd + i];
    }
  }
}

void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) out[i] = (gate[i] * sigmoid(gate[i])) * up[i];
}

void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up, std::int64_t n) {
  // d silu(g)/dg = s (1 + g (1 - s)), s = sigmoid(g)
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = gate[i], s = sigmoid(g);
    dup[i] = dout[i] * (g * s);
    dgate[i] = (dout[i] * up[i]) * (s * (1.0f + g * (1.0f - s)));
  }
}

}  // namespace zero::llama
