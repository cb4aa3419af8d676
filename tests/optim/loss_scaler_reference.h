// Test helper: DeepSpeed's DynamicLossScaler.update_scale, transcribed as plainly as it reads
// there (delayed_shift = hysteresis), the reference the scaler and the engine are checked against.
#pragma once

#include <algorithm>
#include <cmath>

#include "optim/loss_scaler.h"

namespace zero::testing {

struct ReferenceScaler {
  double cur_scale;
  int cur_iter = 0, last_overflow_iter = -1;
  int scale_window, delayed_shift, cur_hysteresis;
  bool consecutive_hysteresis;
  double min_scale;

  explicit ReferenceScaler(const LossScalerConfig& c)
      : cur_scale(std::pow(2.0, c.initial_scale_power)), scale_window(c.window), delayed_shift(c.hysteresis),
        cur_hysteresis(c.hysteresis), consecutive_hysteresis(c.consecutive_hysteresis), min_scale(c.min_scale) {}

  // false: "Current loss scale already at minimum" (DeepSpeed raises).
  bool update_scale(bool overflow) {
    if (overflow) {
      if (delayed_shift == 1 || cur_hysteresis == 1) {
        if (cur_scale == min_scale) return false;
        cur_scale = std::max(cur_scale / 2.0, min_scale);
      } else {
        cur_hysteresis -= 1;
      }
      last_overflow_iter = cur_iter;
    } else {
      if (consecutive_hysteresis) cur_hysteresis = delayed_shift;
      if ((cur_iter - last_overflow_iter) % scale_window == 0) {
        if (!consecutive_hysteresis) cur_hysteresis = delayed_shift;
        cur_scale *= 2.0;
      }
    }
    cur_iter += 1;
    return true;
  }
};

}  // namespace zero::testing
