#include "optim/lamb.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "optim/lamb_body.h"

namespace zero {

LambStep lamb_step_scalars(const AdamConfig& c, const LambConfig& l, std::int64_t t) {
  adam_step_scalars(c, t);  // lr, betas, eps, weight_decay and t: Adam's checks
  if (!(l.max_coeff > 0.0f) || std::isinf(l.max_coeff)) {
    throw ConfigError(cat("[optim] Lamb's max_coeff must be a finite number > 0, not ", l.max_coeff));
  }
  if (!(l.min_coeff >= 0.0f && l.min_coeff <= l.max_coeff)) {
    throw ConfigError(cat("[optim] Lamb's min_coeff must be in [0, max_coeff = ", l.max_coeff, "], not ", l.min_coeff));
  }
  const double bc1 = c.bias_correction ? 1.0 - std::pow(static_cast<double>(c.beta1), static_cast<double>(t)) : 1.0;
  const double bc2 = c.bias_correction ? 1.0 - std::pow(static_cast<double>(c.beta2), static_cast<double>(t)) : 1.0;
  LambStep s;
  s.beta1 = c.beta1;
  s.one_minus_beta1 = static_cast<float>(1.0 - c.beta1);
  s.beta2 = c.beta2;
  s.one_minus_beta2 = static_cast<float>(1.0 - c.beta2);
  s.eps = c.eps;
  s.step_size = static_cast<float>(c.lr * std::sqrt(bc2) / bc1);
  s.weight_decay = c.weight_decay;
  s.max_coeff = l.max_coeff;
  s.min_coeff = l.min_coeff;
  s.eps_inside_sqrt = l.eps_inside_sqrt;
  return s;
}

float lamb_coefficient(const LambStep& s, const LambNorms& total) {
  const double w = std::sqrt(total.param), u = std::sqrt(total.update);
  double ratio = 1.0;
  if (w != 0.0 && u != 0.0) {  // NaN norms give a NaN ratio, which propagates into p
    ratio = w / u;
    if (ratio > s.max_coeff) ratio = s.max_coeff;
    if (ratio < s.min_coeff) ratio = s.min_coeff;
  }
  return static_cast<float>(static_cast<double>(s.step_size) * ratio);
}

LambNorms lamb_moments_reference(const LambStep& s, bool decay, const float* p, const float* g, float* m, float* v,
                                 std::size_t n) {
  const float wd = decay ? s.weight_decay : 0.0f;
  LambNorms total;
  for (std::size_t begin = 0; begin < n; begin += kLambSumBlock) {
    const std::size_t len = std::min(kLambSumBlock, n - begin);
    lamb_body::add(total, lamb_body::moments_block(s, wd, p + begin, g + begin, m + begin, v + begin, len));
  }
  return total;
}

void lamb_update_reference(const LambStep& s, bool decay, float coef, float* p, const float* m, const float* v, std::size_t n) {
  const float wd = decay ? s.weight_decay : 0.0f;
  for (std::size_t i = 0; i < n; ++i) p[i] = std::fma(-coef, lamb_body::update(s, wd, p[i], m[i], v[i]), p[i]);
}

void lamb_reference(const LambStep& s, bool decay, float* p, const float* g, float* m, float* v, std::size_t n) {
  const LambNorms sums = lamb_moments_reference(s, decay, p, g, m, v, n);
  lamb_update_reference(s, decay, lamb_coefficient(s, sums), p, m, v, n);
}

}  // namespace zero
