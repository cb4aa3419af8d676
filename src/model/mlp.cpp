#include "model/mlp.h"

#include <cmath>

#include "common/error.h"
#include "partition/init.h"

namespace zero {

MlpBatch mlp_synthetic_batch(const MlpShape& shape, std::uint64_t seed, std::int64_t step, int first, int rows) {
  const int in = shape.widths.front();
  const int out = shape.widths.back();
  MlpBatch b;
  b.rows = rows;
  b.x.resize(static_cast<std::size_t>(rows) * in);
  b.y.resize(static_cast<std::size_t>(rows) * out);
  const std::uint64_t key = seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(step);
  for (int r = 0; r < rows; ++r) {
    const std::uint64_t row = static_cast<std::uint64_t>(first + r);
    float* x = &b.x[static_cast<std::size_t>(r) * in];
    for (int i = 0; i < in; ++i) x[i] = static_cast<float>(2.0 * counter_uniform(key, row * in + i) - 1.0);
    for (int j = 0; j < out; ++j) {  // y_j = sin(a_j . x), |a_j . x| of order 1
      double s = 0;
      for (int i = 0; i < in; ++i) s += std::sin(0.7 * (i + 1) * (j + 1)) * x[i];
      b.y[static_cast<std::size_t>(r) * out + j] = static_cast<float>(std::sin(2.0 * s / std::sqrt(in)));
    }
  }
  return b;
}

Mlp::Mlp(MlpShape shape) : shape_(std::move(shape)) {
  const auto& w = shape_.widths;
  if (w.size() < 2) throw ConfigError("[model] an MLP needs at least an input and an output width");
  for (int x : w)
    if (x <= 0) throw ConfigError(cat("[model] MLP widths must be positive, not ", x));
  if (shape_.tied && (w.front() != w.back() || w[1] != w[w.size() - 2] || w.size() < 3)) {
    throw ConfigError("[model] a tied MLP needs output width = input width and last hidden width = first hidden width");
  }
}

void Mlp::set_batch(MlpBatch batch) {
  ZERO_CHECK(batch.x.size() == static_cast<std::size_t>(batch.rows) * shape_.widths.front(), "batch x size");
  ZERO_CHECK(batch.y.size() == static_cast<std::size_t>(batch.rows) * shape_.widths.back(), "batch y size");
  batch_ = std::move(batch);
}

std::vector<UnitSpec> Mlp::units() const {
  std::vector<UnitSpec> units;
  for (int l = 0; l < layers(); ++l) {
    const int in = shape_.widths[l], out = shape_.widths[l + 1];
    const std::string name = cat("layer", l);
    UnitSpec unit{name, {}, {}};
    if (weight_is_tied(l)) {
      unit.borrows = {0};
    } else {
      unit.params.push_back({name + ".w", {out, in}, Init::normal(1.0f / std::sqrt(static_cast<float>(in))), true});
    }
    unit.params.push_back({name + ".b", {out}, Init::uniform(0.1f), false});
    units.push_back(std::move(unit));
  }
  return units;
}

// z = x W^T + b, W (out, in) row-major; for the tied layer W[j][i] = W0[i][j].
void Mlp::forward(int l, const UnitViews& views) {
  const int in = shape_.widths[l], out = shape_.widths[l + 1], rows = batch_.rows;
  if (l == 0) acts_.assign(layers() + 1, {}), acts_[0] = batch_.x;
  const bool tied = weight_is_tied(l);
  const float* w = tied ? views.param(0, 0) : views.param(l, 0);
  const float* b = views.param(l, tied ? 0 : 1);
  const std::vector<float>& x = acts_[l];
  std::vector<float>& z = acts_[l + 1];
  z.assign(static_cast<std::size_t>(rows) * out, 0.0f);
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < out; ++j) {
      float s = b[j];
      for (int i = 0; i < in; ++i) s += x[static_cast<std::size_t>(r) * in + i] * (tied ? w[i * out + j] : w[j * in + i]);
      z[static_cast<std::size_t>(r) * out + j] = l + 1 < layers() ? std::tanh(s) : s;
    }
  }
  if (l + 1 == layers()) {  // loss = mean over rows of 0.5 * |z - y|^2; delta = dloss/dz
    delta_.assign(z.size(), 0.0f);
    double loss = 0;
    for (std::size_t k = 0; k < z.size(); ++k) {
      const float d = z[k] - batch_.y[k];
      loss += 0.5 * d * d;
      delta_[k] = d / static_cast<float>(rows);
    }
    loss_ = static_cast<float>(loss / rows);
  }
}

void Mlp::backward(int l, const UnitViews& views) {
  const int in = shape_.widths[l], out = shape_.widths[l + 1], rows = batch_.rows;
  const bool tied = weight_is_tied(l);
  const float* w = tied ? views.param(0, 0) : views.param(l, 0);
  float* dw = tied ? views.grad(0, 0) : views.grad(l, 0);
  float* db = views.grad(l, tied ? 0 : 1);
  if (l + 1 < layers()) {  // through tanh: dz = dy * (1 - y^2)
    const std::vector<float>& y = acts_[l + 1];
    for (std::size_t k = 0; k < delta_.size(); ++k) delta_[k] *= 1.0f - y[k] * y[k];
  }
  const std::vector<float>& x = acts_[l];
  std::vector<float> dx(static_cast<std::size_t>(rows) * in, 0.0f);
  for (int j = 0; j < out; ++j) {
    float sb = 0.0f;
    for (int r = 0; r < rows; ++r) sb += delta_[static_cast<std::size_t>(r) * out + j];
    db[j] += sb;
    for (int i = 0; i < in; ++i) {
      float s = 0.0f;
      for (int r = 0; r < rows; ++r) s += delta_[static_cast<std::size_t>(r) * out + j] * x[static_cast<std::size_t>(r) * in + i];
      (tied ? dw[i * out + j] : dw[j * in + i]) += s;
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < in; ++i) {
      float s = 0.0f;
      for (int j = 0; j < out; ++j) s += delta_[static_cast<std::size_t>(r) * out + j] * (tied ? w[i * out + j] : w[j * in + i]);
      dx[static_cast<std::size_t>(r) * in + i] = s;
    }
  delta_ = std::move(dx);
}

}  // namespace zero
