#include "model/decoder.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <omp.h>

#include "backends/cpu/matmul.h"
#include "common/error.h"
#include "partition/layout.h"

namespace zero {

Decoder::Decoder(const std::vector<UnitSpec>& units, std::vector<float> weights, Dims dims, const std::string& model)
    : d_(dims), vocab_(dims.vocab), weights_(std::move(weights)), matmul_(make_matmul(MatmulKind::kOpenblasF32)) {
  const FlatLayout layout(units, 1);
  if (weights_.size() != layout.numel()) {
    throw ConfigError(cat("[model] the weights have ", weights_.size(), " values; a ", model, " has ", layout.numel()));
  }
  std::size_t at = 0;
  for (int u = 0; u < layout.num_units(); ++u) {
    offsets_.emplace_back();
    for (const ParamPlace& p : layout.unit(u).params) offsets_.back().push_back(at + p.offset);
    at += layout.unit(u).numel;
  }
  const std::size_t cache = static_cast<std::size_t>(d_.layers) * d_.seq_len * d_.channels;
  k_.assign(cache, 0.0f);
  v_.assign(cache, 0.0f);
  att_.assign(static_cast<std::size_t>(d_.seq_len), 0.0f);
  logits_.assign(static_cast<std::size_t>(d_.vocab), 0.0f);
  probs_.assign(static_cast<std::size_t>(d_.vocab), 0.0f);
}

Decoder::~Decoder() = default;

const float* Decoder::feed(int token) {
  // One position's vectors are too small to split over threads: the kernels' parallel regions
  // would cost more than they save (and wait on busy cores), so the decoder runs on one.
  struct OneThread {
    int before = omp_get_max_threads();
    OneThread() { omp_set_num_threads(1); }
    ~OneThread() { omp_set_num_threads(before); }
  } one_thread;
  if (token < 0 || token >= d_.vocab) throw ConfigError(cat("[model] token ", token, " is outside the vocabulary of ", d_.vocab));
  auto advance = [this](int t) {
    step(t);
    tokens_.push_back(t);
    ++pos_;
  };
  if (pos_ == d_.seq_len) {  // the window is full: keep its last half, rebuild the cache
    const std::vector<int> keep(tokens_.end() - d_.seq_len / 2, tokens_.end());
    tokens_.clear();
    pos_ = 0;
    for (int t : keep) advance(t);
  }
  advance(token);
  const float top = *std::max_element(logits_.begin(), logits_.end());
  float sum = 0.0f;
  for (int v = 0; v < d_.vocab; ++v) sum += probs_[v] = std::exp(logits_[v] - top);
  for (int v = 0; v < d_.vocab; ++v) probs_[v] /= sum;
  return probs_.data();
}

void Decoder::attend(int layer, const float* q_all, float* y_all) {
  const int C = d_.channels, NH = d_.heads, hs = C / NH, t = pos_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const float* ks = k_.data() + static_cast<std::size_t>(layer) * d_.seq_len * C;
  const float* vs = v_.data() + static_cast<std::size_t>(layer) * d_.seq_len * C;
  for (int h = 0; h < NH; ++h) {
    const float* q = q_all + h * hs;
    float top = -INFINITY;
    for (int j = 0; j <= t; ++j) {
      const float* k = ks + static_cast<std::size_t>(j) * C + h * hs;
      float s = 0.0f;
      for (int i = 0; i < hs; ++i) s += q[i] * k[i];
      att_[j] = s * scale;
      top = std::max(top, att_[j]);
    }
    float sum = 0.0f;
    for (int j = 0; j <= t; ++j) sum += att_[j] = std::exp(att_[j] - top);
    float* y = y_all + h * hs;
    std::fill(y, y + hs, 0.0f);
    for (int j = 0; j <= t; ++j) {
      const float* v = vs + static_cast<std::size_t>(j) * C + h * hs;
      for (int i = 0; i < hs; ++i) y[i] += att_[j] / sum * v[i];
    }
  }
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
