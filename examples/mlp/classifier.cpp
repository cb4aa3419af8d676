#include "classifier.h"

#include <algorithm>
#include <cmath>

#include "zero/error.h"

namespace example {
namespace {

enum Unit { kEmbed = 0, kHidden = 1, kHead = 2 };

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// y = tanh(w x + b) per row: x (rows, in), w (out, in), y (rows, out).
void dense_tanh(const float* x, const float* w, const float* b, float* y, int rows, int in, int out) {
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < out; ++j) {
      float s = b[j];
      for (int i = 0; i < in; ++i) s += w[j * in + i] * x[r * in + i];
      y[r * out + j] = std::tanh(s);
    }
}

// Backward of dense_tanh given dy (rows, out), overwritten by the pre-activation gradient:
// dw += dz^T x, db += sum dz, and dx = dz w (when dx is not null).
void dense_tanh_backward(float* dy, const float* x, const float* y, const float* w, float* dw, float* db, float* dx,
                         int rows, int in, int out) {
  for (int k = 0; k < rows * out; ++k) dy[k] *= 1.0f - y[k] * y[k];
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < out; ++j) {
      db[j] += dy[r * out + j];
      for (int i = 0; i < in; ++i) dw[j * in + i] += dy[r * out + j] * x[r * in + i];
    }
  if (dx == nullptr) return;
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < in; ++i) {
      float s = 0.0f;
      for (int j = 0; j < out; ++j) s += dy[r * out + j] * w[j * in + i];
      dx[r * in + i] = s;
    }
}

}  // namespace

Batch make_batch(int inputs, std::uint64_t seed, std::int64_t step, int first, int rows) {
  Batch b;
  b.rows = rows;
  b.x.resize(static_cast<std::size_t>(rows) * inputs);
  b.label.resize(rows);
  for (int r = 0; r < rows; ++r) {
    float* x = &b.x[static_cast<std::size_t>(r) * inputs];
    for (int i = 0; i < inputs; ++i) {
      const std::uint64_t key = splitmix64(seed ^ splitmix64(step ^ splitmix64(static_cast<std::uint64_t>(first + r) * inputs + i)));
      x[i] = static_cast<float>(key >> 40) / static_cast<float>(1 << 23) - 1.0f;  // 24 bits: exact in f32
    }
    b.label[r] = static_cast<std::int32_t>(std::max_element(x, x + inputs) - x);
  }
  return b;
}

Classifier::Classifier(int inputs, int hidden) : D_(inputs), H_(hidden) {
  if (inputs < 2 || hidden < 1) throw zero::ConfigError("[example] the classifier needs at least 2 inputs and 1 hidden unit");
}

// Each unit declares its parameters (name, shape, initialisation, weight decay); the engine owns
// their memory. The head declares only its bias and borrows the embedding's weight.
std::vector<zero::UnitSpec> Classifier::units() const {
  const float in_std = 1.0f / std::sqrt(static_cast<float>(D_)), hidden_std = 1.0f / std::sqrt(static_cast<float>(H_));
  return {
      {"embed", {{"embed.w", {H_, D_}, zero::Init::normal(in_std)}, {"embed.b", {H_}, zero::Init::zeros(), false}}, {}},
      {"hidden", {{"hidden.w", {H_, H_}, zero::Init::normal(hidden_std)}, {"hidden.b", {H_}, zero::Init::zeros(), false}}, {}},
      {"head", {{"head.b", {D_}, zero::Init::zeros(), false}}, {kEmbed}},
  };
}

void Classifier::forward(int unit, const zero::UnitViews& views) {
  const int rows = batch_.rows;
  if (unit == kEmbed) {
    h1_.resize(static_cast<std::size_t>(rows) * H_);
    dense_tanh(batch_.x.data(), views.param(kEmbed, 0), views.param(kEmbed, 1), h1_.data(), rows, D_, H_);
  } else if (unit == kHidden) {
    h2_.resize(static_cast<std::size_t>(rows) * H_);
    dense_tanh(h1_.data(), views.param(kHidden, 0), views.param(kHidden, 1), h2_.data(), rows, H_, H_);
  } else {  // logits[r][k] = sum_j w_in[j][k] h2[r][j] + b_out[k]: w_in, borrowed, read transposed
    const float* w_in = views.param(kEmbed, 0);
    const float* b_out = views.param(kHead, 0);
    probs_.resize(static_cast<std::size_t>(rows) * D_);
    double loss = 0.0;
    for (int r = 0; r < rows; ++r) {
      float* p = &probs_[static_cast<std::size_t>(r) * D_];
      for (int k = 0; k < D_; ++k) {
        float s = b_out[k];
        for (int j = 0; j < H_; ++j) s += w_in[j * D_ + k] * h2_[r * H_ + j];
        p[k] = s;
      }
      const float top = *std::max_element(p, p + D_);
      float sum = 0.0f;
      for (int k = 0; k < D_; ++k) sum += (p[k] = std::exp(p[k] - top));
      for (int k = 0; k < D_; ++k) p[k] /= sum;
      loss -= std::log(p[batch_.label[r]]);
    }
    loss_ = static_cast<float>(loss / rows);
  }
}

void Classifier::backward(int unit, const zero::UnitViews& views) {
  const int rows = batch_.rows;
  if (unit == kHead) {  // dlogits = (probs - onehot) / rows; into b_out, the borrowed w_in, and h2
    const float* w_in = views.param(kEmbed, 0);
    float* dw_in = views.grad(kEmbed, 0);  // the tied weight's gradient: the embedding adds its own later
    float* db_out = views.grad(kHead, 0);
    dh_.assign(static_cast<std::size_t>(rows) * H_, 0.0f);
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < D_; ++k) {
        const float d = (probs_[static_cast<std::size_t>(r) * D_ + k] - (k == batch_.label[r] ? 1.0f : 0.0f)) / rows;
        db_out[k] += d;
        for (int j = 0; j < H_; ++j) {
          dw_in[j * D_ + k] += d * h2_[r * H_ + j];
          dh_[r * H_ + j] += d * w_in[j * D_ + k];
        }
      }
  } else if (unit == kHidden) {
    std::vector<float> dh1(static_cast<std::size_t>(rows) * H_);
    dense_tanh_backward(dh_.data(), h1_.data(), h2_.data(), views.param(kHidden, 0), views.grad(kHidden, 0),
                        views.grad(kHidden, 1), dh1.data(), rows, H_, H_);
    dh_ = std::move(dh1);
  } else {
    dense_tanh_backward(dh_.data(), batch_.x.data(), h1_.data(), views.param(kEmbed, 0), views.grad(kEmbed, 0),
                        views.grad(kEmbed, 1), nullptr, rows, D_, H_);
  }
}

}  // namespace example
