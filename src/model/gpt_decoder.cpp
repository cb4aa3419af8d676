#include "model/gpt_decoder.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <omp.h>

#include "common/error.h"
#include "backends/cpu/gpt_kernels.h"
#include "partition/layout.h"

namespace zero {

GptDecoder::GptDecoder(const GptShape& shape, std::vector<float> weights)
    : shape_(shape), weights_(std::move(weights)), matmul_(make_matmul(MatmulKind::kOpenblasF32)) {
  const FlatLayout layout(shape_.units(), 1);
  if (weights_.size() != layout.numel()) {
    throw ConfigError(cat("[model] the weights have ", weights_.size(), " values; a GPT ", shape_.describe(), " has ", layout.numel()));
  }
  std::size_t at = 0;
  for (int u = 0; u < layout.num_units(); ++u) {
    offsets_.emplace_back();
    for (const ParamPlace& p : layout.unit(u).params) offsets_.back().push_back(at + p.offset);
    at += layout.unit(u).numel;
  }
  const std::size_t L = shape_.layers, T = shape_.seq_len, C = shape_.channels;
  k_.assign(L * T * C, 0.0f);
  v_.assign(L * T * C, 0.0f);
  x_.assign(C, 0.0f), a_.assign(C, 0.0f), qkv_.assign(3 * C, 0.0f), y_.assign(C, 0.0f), h_.assign(4 * C, 0.0f);
  tmp_.assign(4 * C, 0.0f), logits_.assign(shape_.vocab_size, 0.0f), probs_.assign(shape_.vocab_size, 0.0f);
}

GptDecoder::~GptDecoder() = default;

const float* GptDecoder::feed(int token) {
  // One position's vectors are too small to split over threads: the kernels' parallel regions
  // would cost more than they save (and wait on busy cores), so the decoder runs on one.
  struct OneThread {
    int before = omp_get_max_threads();
    OneThread() { omp_set_num_threads(1); }
    ~OneThread() { omp_set_num_threads(before); }
  } one_thread;
  if (token < 0 || token >= shape_.vocab_size) throw ConfigError(cat("[model] token ", token, " is outside the vocabulary of ", shape_.vocab_size));
  if (pos_ == shape_.seq_len) {  // the window is full: keep its last half, rebuild the cache
    const std::vector<int> keep(tokens_.end() - shape_.seq_len / 2, tokens_.end());
    tokens_.clear();
    pos_ = 0;
    for (int t : keep) step(t);
  }
  step(token);
  return probs_.data();
}

// One position through every layer: x = wte[token] + wpe[pos], then the blocks, each reading
// the cached keys and values of the positions before it.
void GptDecoder::step(int token) {
  const int C = shape_.channels, NH = shape_.heads, hs = C / NH, T = shape_.seq_len, t = pos_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  float mean, rstd;
  for (int c = 0; c < C; ++c) x_[c] = param(0, 0)[token * C + c] + param(0, 1)[t * C + c];
  std::vector<float> att(t + 1);
  for (int l = 0; l < shape_.layers; ++l) {
    const int u = l + 1;
    float* kc = k_.data() + (static_cast<std::size_t>(l) * T + t) * C;
    float* vc = v_.data() + (static_cast<std::size_t>(l) * T + t) * C;
    gpt::layernorm_forward(a_.data(), &mean, &rstd, x_.data(), param(u, 0), param(u, 1), 1, C);
    gpt::matmul_forward(*matmul_, qkv_.data(), a_.data(), param(u, 2), param(u, 3), 1, C, 3 * C);
    std::copy(qkv_.begin() + C, qkv_.begin() + 2 * C, kc);
    std::copy(qkv_.begin() + 2 * C, qkv_.end(), vc);
    for (int h = 0; h < NH; ++h) {  // softmax(q k^T / sqrt(hs)) v over positions 0..t
      const float* q = qkv_.data() + h * hs;
      float top = -INFINITY;
      for (int j = 0; j <= t; ++j) {
        const float* k = k_.data() + (static_cast<std::size_t>(l) * T + j) * C + h * hs;
        float s = 0.0f;
        for (int i = 0; i < hs; ++i) s += q[i] * k[i];
        att[j] = s * scale;
        top = std::max(top, att[j]);
      }
      float sum = 0.0f;
      for (int j = 0; j <= t; ++j) sum += att[j] = std::exp(att[j] - top);
      float* y = y_.data() + h * hs;
      std::fill(y, y + hs, 0.0f);
      for (int j = 0; j <= t; ++j) {
        const float* v = v_.data() + (static_cast<std::size_t>(l) * T + j) * C + h * hs;
        for (int i = 0; i < hs; ++i) y[i] += att[j] / sum * v[i];
      }
    }
    gpt::matmul_forward(*matmul_, tmp_.data(), y_.data(), param(u, 4), param(u, 5), 1, C, C);
    gpt::residual_forward(x_.data(), x_.data(), tmp_.data(), C);
    gpt::layernorm_forward(a_.data(), &mean, &rstd, x_.data(), param(u, 6), param(u, 7), 1, C);
    gpt::matmul_forward(*matmul_, h_.data(), a_.data(), param(u, 8), param(u, 9), 1, C, 4 * C);
    gpt::gelu_forward(tmp_.data(), h_.data(), 4 * C);
    gpt::matmul_forward(*matmul_, h_.data(), tmp_.data(), param(u, 10), param(u, 11), 1, 4 * C, C);
    gpt::residual_forward(x_.data(), x_.data(), h_.data(), C);
  }
  const int head = shape_.layers + 1, V = shape_.vocab_size;
  gpt::layernorm_forward(a_.data(), &mean, &rstd, x_.data(), param(head, 0), param(head, 1), 1, C);
  gpt::matmul_forward(*matmul_, logits_.data(), a_.data(), param(0, 0), nullptr, 1, C, V);  // tied to wte
  const float top = *std::max_element(logits_.begin(), logits_.end());
  float sum = 0.0f;
  for (int v = 0; v < V; ++v) sum += probs_[v] = std::exp(logits_[v] - top);
  for (int v = 0; v < V; ++v) probs_[v] /= sum;
  tokens_.push_back(token);
  ++pos_;
}

int sample_token(const float* probs, int vocab, double temperature, int top_k, double u) {
  std::vector<int> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return probs[a] > probs[b]; });
  if (temperature <= 0.0) return order[0];
  const int k = top_k > 0 ? std::min(top_k, vocab) : vocab;
  // p^(1/T), renormalised over the k most likely: softmax(logits / T) restricted to the top k.
  // In log space, relative to the most likely token (whose weight is 1): p^(1/T) itself
  // underflows to 0 for every token at a low temperature (0.5^1000), and 0/0 drew the least
  // likely. A token of probability 0 has weight exp(-inf) = 0 and is never drawn.
  const double top = std::log(static_cast<double>(probs[order[0]]));
  std::vector<double> w(k);
  double total = 0;
  for (int i = 0; i < k; ++i) total += w[i] = std::exp((std::log(static_cast<double>(probs[order[i]])) - top) / temperature);
  double acc = 0;
  int last = 0;  // the last token with a weight: where rounding leaves u at or above the final sum
  for (int i = 0; i < k; ++i) {
    if (w[i] == 0.0) continue;
    last = i;
    acc += w[i] / total;
    if (u < acc) return order[i];
  }
  return order[last];
}

}  // namespace zero
