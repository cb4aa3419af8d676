// fp16 loss scaling, with DeepSpeed's rule (its DynamicLossScaler, keys of the fp16 section).
//
// The loss is multiplied by the scale before backward, so that small gradients survive fp16;
// the optimizer divides it out. After each step's reduction the ranks agree whether any gradient
// overflowed (inf or NaN). On overflow the step is skipped and, once `hysteresis` overflows have
// been absorbed, the scale halves (never below min_scale; at min_scale an overflow is an error,
// as DeepSpeed's "Current loss scale already at minimum"). After `window` steps without overflow
// the scale doubles. With consecutive_hysteresis, a clean step restores the hysteresis budget;
// without it, only a growth does. A static scale (DeepSpeed's loss_scale > 0) never changes; a
// step that overflows under it is skipped all the same, as DeepSpeed skips it.
#pragma once

#include <cstdint>

namespace zero {

struct LossScalerConfig {
  double static_scale = 0.0;      // DeepSpeed's loss_scale: 0 = dynamic, else this fixed scale
  int initial_scale_power = 16;   // dynamic: the first scale is 2^power
  int window = 1000;              // loss_scale_window: clean steps before the scale doubles
  int hysteresis = 2;             // overflows absorbed before the scale halves (DeepSpeed's delayed_shift)
  bool consecutive_hysteresis = false;
  double min_scale = 1.0;         // min_loss_scale
  bool dynamic() const { return static_scale == 0.0; }
};

// The scaler's state between steps: what a checkpoint keeps so that a resumed run scales,
// skips and grows exactly as the uninterrupted one.
struct LossScalerState {
  double scale = 1.0;
  int hysteresis_left = 0;             // overflows still absorbed before the next halving
  std::int64_t iter = 0;               // steps seen
  std::int64_t last_overflow_iter = -1;
};

// ConfigError naming the key when a setting is out of range.
void check_loss_scaler(const LossScalerConfig& c);

class LossScaler {
 public:
  explicit LossScaler(const LossScalerConfig& c);
  float scale() const { return static_cast<float>(scale_); }
  bool dynamic() const { return config_.dynamic(); }
  // After a step whose gradients did (or did not) overflow. Throws TrainingError when an
  // overflow happens at the minimum scale.
  void update(bool overflow);
  LossScalerState state() const { return {scale_, hysteresis_left_, iter_, last_overflow_iter_}; }
  // Continues from a saved state. ConfigError when this config cannot have reached it (a scale
  // below min_scale, more hysteresis left than the config allows).
  void restore(const LossScalerState& s);

 private:
  LossScalerConfig config_;
  double scale_;
  int hysteresis_left_;
  std::int64_t iter_ = 0;
  std::int64_t last_overflow_iter_ = -1;
};

}  // namespace zero
