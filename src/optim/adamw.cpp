#include "optim/adamw.h"

#include <cmath>

#include "common/error.h"

namespace zero {

AdamStep adam_step_scalars(const AdamConfig& c, std::int64_t t) {
  if (!(c.lr >= 0.0f) || std::isinf(c.lr)) throw ConfigError(cat("[optim] learning rate must be a finite number >= 0, not ", c.lr));
  if (!(c.beta1 >= 0.0f && c.beta1 < 1.0f)) throw ConfigError(cat("[optim] beta1 must be in [0, 1), not ", c.beta1));
  if (!(c.beta2 >= 0.0f && c.beta2 < 1.0f)) throw ConfigError(cat("[optim] beta2 must be in [0, 1), not ", c.beta2));
  if (!(c.eps > 0.0f) || std::isinf(c.eps)) throw ConfigError(cat("[optim] eps must be a finite number > 0, not ", c.eps));
  if (!(c.weight_decay >= 0.0f) || std::isinf(c.weight_decay)) throw ConfigError(cat("[optim] weight_decay must be a finite number >= 0, not ", c.weight_decay));
  if (t < 1) throw ConfigError(cat("[optim] step numbers start at 1, not ", t));
  // DeepSpeed's bias_correction: false (FusedAdam, CPU Adam) takes both corrections as 1.
  const double bc1 = c.bias_correction ? 1.0 - std::pow(static_cast<double>(c.beta1), static_cast<double>(t)) : 1.0;
  const double bc2 = c.bias_correction ? 1.0 - std::pow(static_cast<double>(c.beta2), static_cast<double>(t)) : 1.0;
  AdamStep s;
  s.lr = c.lr;
  s.beta1 = c.beta1;
  s.one_minus_beta1 = static_cast<float>(1.0 - c.beta1);
  s.beta2 = c.beta2;
  s.one_minus_beta2 = static_cast<float>(1.0 - c.beta2);
  s.eps = c.eps;
  s.step_size = static_cast<float>(c.lr / bc1);
  s.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  s.decay_factor = static_cast<float>(1.0 - static_cast<double>(c.lr) * c.weight_decay);
  s.weight_decay = c.weight_decay;
  s.decoupled = c.decoupled;
  return s;
}

void adam_reference(const AdamStep& s, bool decay, float* p, const float* g, float* m, float* v, std::size_t n) {
  const bool l2 = decay && !s.decoupled;
  const bool decoupled = decay && s.decoupled;
  for (std::size_t i = 0; i < n; ++i) {
    float gi = g[i];
    if (l2) gi = std::fma(s.weight_decay, p[i], gi);
    const float mi = std::fma(s.beta1, m[i], s.one_minus_beta1 * gi);
    const float vi = std::fma(s.beta2, v[i], (s.one_minus_beta2 * gi) * gi);
    const float denom = std::fma(std::sqrt(vi), s.inv_sqrt_bc2, s.eps);
    float pi = p[i];
    if (decoupled) pi = pi * s.decay_factor;
    p[i] = std::fma(-s.step_size, mi / denom, pi);
    m[i] = mi;
    v[i] = vi;
  }
}

}  // namespace zero
