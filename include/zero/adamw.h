// Adam and AdamW over flat fp32 spans: the scalar reference.
//
// Every fast kernel performs exactly these operations in exactly this order (fused multiply-add
// where written below), so its output is bit-identical to this reference. Per element, with
// g the gradient, p the parameter, m and v the moments:
//   Adam (L2) with decay:  g = fma(wd, p, g)
//   m = fma(beta1, m, (1 - beta1) * g)
//   v = fma(beta2, v, ((1 - beta2) * g) * g)
//   denom = fma(sqrt(v), 1 / sqrt(1 - beta2^t), eps)   (without bias correction: 1 / sqrt(1) = 1)
//   AdamW with decay:      p = p * (1 - lr * wd)
//   p = fma(-lr / (1 - beta1^t), m / denom, p)        (without bias correction: -lr / 1)
// NaN or Inf in a gradient propagates into m, v and p exactly as IEEE arithmetic says.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zero {

struct AdamConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled = true;  // true: AdamW (decoupled decay); false: Adam with L2 added to the gradient
  bool bias_correction = true;  // false: DeepSpeed's bias_correction: false, 1 - beta^t taken as 1
};

// The per-step scalars, derived once in double and rounded once, so all kernels share them.
struct AdamStep {
  float lr, beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
  float step_size;     // lr / (1 - beta1^t)
  float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t)
  float decay_factor;  // 1 - lr * wd        (AdamW)
  float weight_decay;  // wd                 (Adam, L2)
  bool decoupled;
  bool operator==(const AdamStep&) const = default;
};

// Validates the configuration (ConfigError naming the bad value) and derives step t's scalars.
// t counts optimizer steps from 1.
AdamStep adam_step_scalars(const AdamConfig& config, std::int64_t t);

// One step over n elements. `decay` says whether weight decay applies to this run of elements.
void adam_reference(const AdamStep& s, bool decay, float* p, const float* g, float* m, float* v, std::size_t n);

}  // namespace zero
