#include "model/gpt_kernels.h"

#include <cblas.h>

#include <cmath>
#include <cstring>

namespace zero::gpt {

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
  // Parallel over channels: every thread visits the positions in the same order, so a token
  // that appears twice gets its contributions added in a fixed order.
#pragma omp parallel for schedule(static)
  for (int i = 0; i < C; ++i) {
    for (int b = 0; b < B; ++b) {
      for (int t = 0; t < T; ++t) {
        const float d = dout[(static_cast<std::int64_t>(b) * T + t) * C + i];
        dwte[static_cast<std::int64_t>(tokens[b * T + t]) * C + i] += d;
        dwpe[static_cast<std::int64_t>(t) * C + i] += d;
      }
    }
  }
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int N, int C) {
  const float eps = 1e-5f;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<std::int64_t>(n) * C;
    float m = 0.0f;
    for (int i = 0; i < C; ++i) m += x[i];
    m /= C;
    float v = 0.0f;
    for (int i = 0; i < C; ++i) v += (x[i] - m) * (x[i] - m);
    v /= C;
    const float s = 1.0f / std::sqrt(v + eps);
    float* o = out + static_cast<std::int64_t>(n) * C;
    for (int i = 0; i < C; ++i) o[i] = (s * (x[i] - m)) * w[i] + b[i];
    mean[n] = m;
    rstd[n] = s;
  }
}

void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int N, int C) {
  // Parameter gradients: one channel per thread, rows in order.
#pragma omp parallel for schedule(static)
  for (int i = 0; i < C; ++i) {
    float sw = 0.0f, sb = 0.0f;
    for (int n = 0; n < N; ++n) {
      const float d = dout[static_cast<std::int64_t>(n) * C + i];
      const float norm = (inp[static_cast<std::int64_t>(n) * C + i] - mean[n]) * rstd[n];
      sw += norm * d;
      sb += d;
    }
    dw[i] += sw;
    db[i] += sb;
  }
  // Input gradient: one row per thread.
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* d = dout + static_cast<std::int64_t>(n) * C;
    const float* x = inp + static_cast<std::int64_t>(n) * C;
    float* dx = dinp + static_cast<std::int64_t>(n) * C;
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    for (int i = 0; i < C; ++i) {
      const float norm = (x[i] - mean[n]) * rstd[n];
      const float dnorm = w[i] * d[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int i = 0; i < C; ++i) {
      const float norm = (x[i] - mean[n]) * rstd[n];
      const float dnorm = w[i] * d[i];
      dx[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[n];
    }
  }
}

void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, w, C, 0.0f, out, OC);
  if (bias == nullptr) return;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    float* o = out + static_cast<std::int64_t>(n) * OC;
    for (int j = 0; j < OC; ++j) o[j] += bias[j];
  }
}

void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w, int N,
                     int C, int OC) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout, OC, w, C, 0.0f, dinp, C);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dw, C);
  if (dbias == nullptr) return;
#pragma omp parallel for schedule(static)
  for (int j = 0; j < OC; ++j) {
    float s = 0.0f;
    for (int n = 0; n < N; ++n) s += dout[static_cast<std::int64_t>(n) * OC + j];
    dbias[j] += s;
  }
}

void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::int64_t C3 = 3 * static_cast<std::int64_t>(C);
#pragma omp parallel for collapse(3) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < NH; ++h) {
        const float* q = qkv + (static_cast<std::int64_t>(b) * T + t) * C3 + h * hs;
        const std::int64_t row = ((static_cast<std::int64_t>(b) * NH + h) * T + t) * T;
        float* pre = preatt + row;
        float* a = att + row;
        float maxv = -INFINITY;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (static_cast<std::int64_t>(b) * T + t2) * C3 + h * hs + C;
          float s = 0.0f;
          for (int i = 0; i < hs; ++i) s += q[i] * k[i];
          s *= scale;
          pre[t2] = s;
          if (s > maxv) maxv = s;
        }
        float sum = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float e = std::exp(pre[t2] - maxv);
          a[t2] = e;
          sum += e;
        }
        const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
        for (int t2 = 0; t2 < T; ++t2) a[t2] = t2 <= t ? a[t2] * inv : 0.0f;  // causal: future masked
        float* o = out + (static_cast<std::int64_t>(b) * T + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) o[i] = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (static_cast<std::int64_t>(b) * T + t2) * C3 + h * hs + 2 * C;
          for (int i = 0; i < hs; ++i) o[i] += a[t2] * v[i];
        }
      }
    }
  }
}

void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv, const float* att,
                        int B, int T, int C, int NH) {
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::int64_t C3 = 3 * static_cast<std::int64_t>(C);
  // One (batch, head) per thread: the keys and values of every position of that head are
  // written only by it, in time order.
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {  // clear this head's q, k and v gradients at every position
        float* g = dqkv + (static_cast<std::int64_t>(b) * T + t) * C3 + h * hs;
        for (int i = 0; i < hs; ++i) g[i] = g[C + i] = g[2 * C + i] = 0.0f;
      }
      for (int t = 0; t < T; ++t) {
        const std::int64_t row = ((static_cast<std::int64_t>(b) * NH + h) * T + t) * T;
        const float* a = att + row;
        float* da = datt + row;
        float* dpre = dpreatt + row;
        const float* q = qkv + (static_cast<std::int64_t>(b) * T + t) * C3 + h * hs;
        float* dq = dqkv + (static_cast<std::int64_t>(b) * T + t) * C3 + h * hs;
        const float* d = dout + (static_cast<std::int64_t>(b) * T + t) * C + h * hs;
        // out = sum_t2 att[t2] v[t2]
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (static_cast<std::int64_t>(b) * T + t2) * C3 + h * hs + 2 * C;
          float* dv = dqkv + (static_cast<std::int64_t>(b) * T + t2) * C3 + h * hs + 2 * C;
          float s = 0.0f;
          for (int i = 0; i < hs; ++i) {
            s += v[i] * d[i];
            dv[i] += a[t2] * d[i];
          }
          da[t2] = s;
        }
        // softmax: dpre[t3] = sum_t2 att[t2] (delta(t2,t3) - att[t3]) da[t2]
        float dot = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) dot += a[t2] * da[t2];
        for (int t3 = 0; t3 <= t; ++t3) dpre[t3] = a[t3] * (da[t3] - dot);
        // preatt = q . k * scale
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (static_cast<std::int64_t>(b) * T + t2) * C3 + h * hs + C;
          float* dk = dqkv + (static_cast<std::int64_t>(b) * T + t2) * C3 + h * hs + C;
          const float g = dpre[t2] * scale;
          for (int i = 0; i < hs; ++i) {
            dq[i] += k[i] * g;
            dk[i] += q[i] * g;
          }
        }
      }
    }
  }
}

namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
}

void gelu_forward(float* out, const float* inp, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + std::tanh(kGeluScale * (x + 0.044715f * x * x * x)));
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = inp[i];
    const float u = kGeluScale * (x + 0.044715f * x * x * x);
    const float th = std::tanh(u);
    const float sech2 = 1.0f - th * th;
    const float local = 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] = local * dout[i];
  }
}

void residual_forward(float* out, const float* a, const float* b, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
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
