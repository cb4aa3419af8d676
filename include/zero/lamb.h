// Lamb (You et al., "Large Batch Optimization for Deep Learning", 2019) as DeepSpeed's FusedLamb
// computes it: the scalar reference.
//
// Lamb is Adam whose step is rescaled per parameter tensor by a trust ratio, the tensor's norm
// over the norm of its update. Per element, with g the gradient, p the parameter, m and v the
// moments and wd the weight decay (0 where the parameter takes no decay):
//   m = fma(beta1, m, (1 - beta1) * g)
//   v = fma(beta2, v, ((1 - beta2) * g) * g)
//   denom = sqrt(v) + eps                 (eps_inside_sqrt: sqrt(v + eps))
//   u = fma(wd, p, m / denom)             the update: weight decay enters it, before its norm
// and per parameter tensor, over all its elements (on every rank):
//   ratio = clamp(||p|| / ||u||, min_coeff, max_coeff), or 1 when either norm is 0
//   coef = step_size * ratio              (rounded to f32 once, computed in double)
//   p = fma(-coef, u, p)
// As in DeepSpeed, bias correction is not applied to m and v inside u (so not inside ||u||
// either): it is folded into step_size = lr * sqrt(1 - beta2^t) / (1 - beta1^t) (lr without it).
//
// The step therefore runs in two phases with a reduction between them: phase 1 updates m and v
// and sums p^2 and u^2 per tensor; the sums of every rank's slices are added (in rank order) into
// each tensor's norms; phase 2 recomputes u from p, m and v, bit for bit as in phase 1, and moves
// p. Recomputing u costs arithmetic, not memory: Lamb holds nothing beyond Adam's m and v.
//
// Sums. Each run of elements (one parameter's elements within one rank's slice) is summed in
// blocks of kLambSumBlock elements from the run's start: each block in double, left to right,
// from 0; the block sums added left to right. The order depends only on the run, so a threaded
// kernel (one block per task) gives the reference's bits, and every stage, which sums the same
// runs, the same norms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "zero/adamw.h"

namespace zero {

inline constexpr std::size_t kLambSumBlock = 2048;

// DeepSpeed's FusedLamb parameters beyond Adam's (lr, betas, eps, weight_decay, bias_correction).
struct LambConfig {
  float max_coeff = 10.0f;
  float min_coeff = 0.01f;
  bool eps_inside_sqrt = false;
};

// The per-step scalars, derived once in double and rounded once, as AdamStep's.
struct LambStep {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
  float step_size;     // lr * sqrt(1 - beta2^t) / (1 - beta1^t); lr without bias correction
  float weight_decay;
  float max_coeff, min_coeff;
  bool eps_inside_sqrt;
  bool operator==(const LambStep&) const = default;
};

// Validates (ConfigError naming the bad value) and derives step t's scalars; t counts from 1.
LambStep lamb_step_scalars(const AdamConfig& adam, const LambConfig& lamb, std::int64_t t);

// The two sums of one parameter tensor's elements (or a rank's part of them).
struct LambNorms {
  double param = 0.0;   // sum of p^2
  double update = 0.0;  // sum of u^2
};

// The trust ratio's coefficient coef = step_size * ratio from a tensor's summed squares.
float lamb_coefficient(const LambStep& s, const LambNorms& total);

// Phase 1 over one run of n elements: m and v updated in place; the run's sums returned. `decay`:
// weight decay applies to these elements.
LambNorms lamb_moments_reference(const LambStep& s, bool decay, const float* p, const float* g, float* m, float* v,
                                 std::size_t n);
// Phase 2 over one run: p = fma(-coef, u, p), with u recomputed from p, m and v.
void lamb_update_reference(const LambStep& s, bool decay, float coef, float* p, const float* m, const float* v, std::size_t n);

// The reference, whole: one step of one tensor (all its elements in one run), both phases.
void lamb_reference(const LambStep& s, bool decay, float* p, const float* g, float* m, float* v, std::size_t n);

}  // namespace zero
