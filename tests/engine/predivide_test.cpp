// DeepSpeed's prescale_gradients and gradient_predivide_factor: each rank's gradient divided by f
// before the rank-order sum, the sum by N * micro-batches / f after. The stages still agree bit for
// bit (offload included), and the weights differ from the plain average by rounding only.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/mlp_run.h"

namespace zero::testing {
namespace {

std::vector<float> weights(MlpRun run, int n, int stage, bool offload) {
  run.stage = stage;
  run.offload.optimizer = offload;
  return run_threads(run, n)[0].params;
}

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / std::max(1e-3, std::fabs(static_cast<double>(b[i]))));
  }
  return worst;
}

TEST(Predivide, EveryStageAndOffloadAgreeBitForBit) {
  for (int n : {1, 2, 3, 4}) {
    for (double f : {static_cast<double>(n), 8.0, 0.5, 3.0}) {
      MlpRun run;
      run.steps = 4;
      run.predivide = f;
      const std::vector<float> stage0 = weights(run, n, 0, false);
      for (int stage = 1; stage <= 3; ++stage) {
        for (bool offload : {false, true}) {
          EXPECT_TRUE(same_bits(weights(run, n, stage, offload), stage0)) << "N=" << n << " f=" << f << " stage " << stage
                                                                          << (offload ? " with offload" : "");
        }
      }
      run.predivide = 1.0;
      const double diff = max_relative_difference(stage0, weights(run, n, 0, false));
      EXPECT_LT(diff, 1e-4) << "N=" << n << " f=" << f;
      std::printf("[ measured ] N=%d predivide %g: stages 0-3 and offload bit-identical; max relative difference to f=1: %.3g\n", n, f, diff);
    }
  }
}

TEST(Predivide, PrescaleChangesTheRoundingNotTheMath) {
  MlpRun run;
  run.steps = 4;
  const std::vector<float> plain = weights(run, 3, 2, false);
  run.predivide = 3.0;  // prescale_gradients on 3 ranks: x/3 + y/3 + z/3 instead of (x + y + z)/3
  const std::vector<float> prescaled = weights(run, 3, 2, false);
  EXPECT_FALSE(same_bits(plain, prescaled)) << "the division before the sum was not applied";
  EXPECT_LT(max_relative_difference(prescaled, plain), 1e-4);
}

TEST(Predivide, WithAccumulationThePairsOfStagesStillAgree) {
  MlpRun run;
  run.steps = 3;
  run.global_batch = 24;
  run.micro_batches = 2;
  run.predivide = 3.0;
  EXPECT_TRUE(same_bits(weights(run, 3, 0, false), weights(run, 3, 1, false)));
  EXPECT_TRUE(same_bits(weights(run, 3, 2, false), weights(run, 3, 3, false)));
}

TEST(Predivide, BadFactorIsAConfigError) {
  MlpRun run;
  for (double f : {0.0, -1.0, std::nan("")}) {
    run.predivide = f;
    EXPECT_THROW(run_threads(run, 1), ConfigError) << f;
  }
}

}  // namespace
}  // namespace zero::testing
