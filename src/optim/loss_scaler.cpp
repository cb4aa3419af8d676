#include "optim/loss_scaler.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace zero {

void check_loss_scaler(const LossScalerConfig& c) {
  if (!(c.static_scale >= 0.0) || !std::isfinite(c.static_scale)) {
    throw ConfigError(cat("[config] fp16.loss_scale must be 0 (dynamic) or a positive finite number, not ", c.static_scale));
  }
  if (!c.dynamic()) return;
  if (c.initial_scale_power < 0 || c.initial_scale_power > 100) {
    throw ConfigError(cat("[config] fp16.initial_scale_power must be between 0 and 100, not ", c.initial_scale_power));
  }
  if (c.window < 1) throw ConfigError(cat("[config] fp16.loss_scale_window must be at least 1, not ", c.window));
  if (c.hysteresis < 1) throw ConfigError(cat("[config] fp16.hysteresis must be at least 1, not ", c.hysteresis));
  if (!(c.min_scale > 0.0) || !std::isfinite(c.min_scale)) {
    throw ConfigError(cat("[config] fp16.min_loss_scale must be a positive finite number, not ", c.min_scale));
  }
  if (c.min_scale > std::ldexp(1.0, c.initial_scale_power)) {
    throw ConfigError(cat("[config] fp16.min_loss_scale (", c.min_scale, ") is above the initial scale 2^",
                          c.initial_scale_power, ": lower min_loss_scale or raise initial_scale_power"));
  }
}

LossScaler::LossScaler(const LossScalerConfig& c)
    : config_(c), scale_(c.dynamic() ? std::ldexp(1.0, c.initial_scale_power) : c.static_scale), hysteresis_left_(c.hysteresis) {
  check_loss_scaler(c);
}

void LossScaler::update(bool overflow) {
  if (!dynamic()) return;
  if (overflow) {
    if (config_.hysteresis == 1 || hysteresis_left_ == 1) {
      if (scale_ == config_.min_scale) {
        throw TrainingError(cat("[engine] fp16 gradients overflowed at step ", iter_ + 1, " with the loss scale already at its "
                                 "minimum (fp16.min_loss_scale = ", config_.min_scale, "): the run diverged. Lower the learning "
                                 "rate, use bf16, or lower min_loss_scale"));
      }
      scale_ = std::max(scale_ / 2.0, config_.min_scale);
    } else {
      --hysteresis_left_;
    }
    last_overflow_iter_ = iter_;
  } else {
    if (config_.consecutive_hysteresis) hysteresis_left_ = config_.hysteresis;
    if ((iter_ - last_overflow_iter_) % config_.window == 0) {
      if (!config_.consecutive_hysteresis) hysteresis_left_ = config_.hysteresis;
      scale_ *= 2.0;
    }
  }
  ++iter_;
}

void LossScaler::restore(const LossScalerState& s) {
  if (!dynamic()) return;  // a static scale has no state
  if (!(s.scale >= config_.min_scale) || !std::isfinite(s.scale) || s.hysteresis_left < 1 || s.hysteresis_left > config_.hysteresis ||
      s.iter < 0 || s.last_overflow_iter < -1 || s.last_overflow_iter >= s.iter) {
    throw ConfigError(cat("[engine] the saved fp16 loss scaler (scale ", s.scale, ", hysteresis left ", s.hysteresis_left, ", step ",
                          s.iter, ", last overflow ", s.last_overflow_iter, ") cannot come from this fp16 section (min_loss_scale ",
                          config_.min_scale, ", hysteresis ", config_.hysteresis, "): resume with the fp16 settings that saved it"));
  }
  scale_ = s.scale;
  hysteresis_left_ = s.hysteresis_left;
  iter_ = s.iter;
  last_overflow_iter_ = s.last_overflow_iter;
}

}  // namespace zero
