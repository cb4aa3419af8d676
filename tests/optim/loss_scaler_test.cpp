// The fp16 loss scaler against a plainly written reference of DeepSpeed's DynamicLossScaler
// (update_scale with delayed_shift = hysteresis, consecutive_hysteresis, min_scale and the error
// at the minimum), over many overflow sequences and settings.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

#include "common/error.h"
#include "optim/loss_scaler.h"
#include "optim/loss_scaler_reference.h"

namespace zero {
namespace {

using testing::ReferenceScaler;

TEST(LossScaler, EqualsDeepSpeedsRuleOnRandomOverflowSequences) {
  std::mt19937 rng(5);
  int raised = 0;
  for (int power : {0, 3, 16, 40})
    for (int window : {1, 2, 5, 1000})
      for (int hysteresis : {1, 2, 4})
        for (bool consecutive : {false, true})
          for (double min_scale : {1.0, 0.25, 8.0})
            for (double p_overflow : {0.1, 0.5, 0.9}) {
              LossScalerConfig c;
              c.initial_scale_power = power;
              c.window = window;
              c.hysteresis = hysteresis;
              c.consecutive_hysteresis = consecutive;
              c.min_scale = min_scale;
              if (min_scale > std::ldexp(1.0, power)) continue;
              LossScaler scaler(c);
              ReferenceScaler ref(c);
              std::bernoulli_distribution overflow(p_overflow);
              for (int step = 0; step < 300; ++step) {
                ASSERT_EQ(scaler.scale(), static_cast<float>(ref.cur_scale)) << "step " << step;
                const bool o = overflow(rng);
                const bool ok = ref.update_scale(o);
                if (!ok) {
                  EXPECT_THROW(scaler.update(o), TrainingError);
                  ++raised;
                  break;
                }
                scaler.update(o);
              }
            }
  EXPECT_GT(raised, 0) << "some sequences reach the minimum and must stop";
}

TEST(LossScaler, HysteresisWindowAndMinimumByHand) {
  LossScalerConfig c;
  c.initial_scale_power = 4;  // 16
  c.window = 3;
  c.hysteresis = 2;
  c.min_scale = 4;
  LossScaler s(c);
  s.update(true);  // absorbed by the hysteresis
  EXPECT_EQ(s.scale(), 16.0f);
  s.update(true);  // halves
  EXPECT_EQ(s.scale(), 8.0f);
  s.update(true);  // the budget is not restored without consecutive_hysteresis: halves again
  EXPECT_EQ(s.scale(), 4.0f);
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 4.0f);
  s.update(false);  // three clean steps since the last overflow: doubles
  EXPECT_EQ(s.scale(), 8.0f);
  s.update(true);   // the growth restored the hysteresis
  EXPECT_EQ(s.scale(), 8.0f);
  s.update(true);
  EXPECT_EQ(s.scale(), 4.0f);
  try {
    s.update(true);
    FAIL() << "an overflow at the minimum scale must stop the run";
  } catch (const TrainingError& e) {
    EXPECT_NE(std::string(e.what()).find("already at its minimum"), std::string::npos) << e.what();
  }
}

TEST(LossScaler, StaticScaleNeverChanges) {
  LossScalerConfig c;
  c.static_scale = 128;
  LossScaler s(c);
  for (bool o : {true, true, false, true}) s.update(o);
  EXPECT_EQ(s.scale(), 128.0f);
  EXPECT_FALSE(s.dynamic());
}

TEST(LossScaler, BadSettingsNameTheKey) {
  const auto message = [](LossScalerConfig c) {
    try {
      check_loss_scaler(c);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  LossScalerConfig c;
  c.static_scale = -1;
  EXPECT_NE(message(c).find("fp16.loss_scale"), std::string::npos);
  c = {};
  c.static_scale = std::nan("");
  EXPECT_NE(message(c).find("fp16.loss_scale"), std::string::npos);
  c = {};
  c.min_scale = 1e9;
  EXPECT_NE(message(c).find("fp16.min_loss_scale"), std::string::npos);
  c = {};
  c.window = 0;
  EXPECT_NE(message(c).find("fp16.loss_scale_window"), std::string::npos);
}

// A scaler restored from another's state at any step continues exactly as the original (what a
// checkpoint of an fp16 run relies on); a state the config cannot reach is refused.
TEST(LossScaler, RestoredStateContinuesIdentically) {
  std::mt19937 rng(11);
  for (int hysteresis : {1, 3})
    for (bool consecutive : {false, true})
      for (int cut : {0, 1, 7, 40}) {
        LossScalerConfig c;
        c.initial_scale_power = 12;
        c.window = 4;
        c.hysteresis = hysteresis;
        c.consecutive_hysteresis = consecutive;
        c.min_scale = std::ldexp(1.0, -100);  // never reached: the sequences go on
        LossScaler original(c);
        std::bernoulli_distribution overflow(0.3);
        std::vector<bool> overflows(120);
        for (std::size_t i = 0; i < overflows.size(); ++i) overflows[i] = overflow(rng);
        for (int i = 0; i < cut; ++i) original.update(overflows[i]);
        LossScaler resumed(c);
        resumed.restore(original.state());
        for (std::size_t i = cut; i < overflows.size(); ++i) {
          original.update(overflows[i]);
          resumed.update(overflows[i]);
          ASSERT_EQ(resumed.scale(), original.scale()) << "cut " << cut << ", step " << i;
          ASSERT_EQ(resumed.state().hysteresis_left, original.state().hysteresis_left);
        }
      }
  LossScalerConfig c;
  c.hysteresis = 2;
  c.min_scale = 1;
  LossScaler s(c);
  EXPECT_THROW(s.restore({0.5, 1, 3, 1}), ConfigError);   // below min_loss_scale
  EXPECT_THROW(s.restore({1024, 3, 3, 1}), ConfigError);  // more hysteresis than configured
  EXPECT_THROW(s.restore({1024, 1, 3, 3}), ConfigError);  // an overflow not yet seen
  s.restore({1024, 1, 3, 1});
  EXPECT_EQ(s.scale(), 1024.0f);
}

}  // namespace
}  // namespace zero
