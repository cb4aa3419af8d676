// Lamb in the engine, on thread ranks: stages 0-3 and every offload placement give the same bits
// (the per-tensor sums of every rank's slices are added in rank order), in f32 and mixed precision,
// with clipping and accumulation; the trust ratio is per whole tensor, not per rank's slice; the
// ledger holds what Adam's would; bad combinations are refused.
#include <gtest/gtest.h>

#include "common/error.h"
#include "engine/mlp_run.h"

namespace zero {
namespace {

using testing::MlpRun;
using testing::run_threads;
using testing::same_bits;

MlpRun lamb_run() {
  MlpRun run;
  run.steps = 4;
  run.optimizer = OptimizerKind::kLamb;
  run.lamb.max_coeff = 0.3f;  // binds for some tensors of the test MLP, so both clamp sides are exercised
  return run;
}

struct Placement {
  int stage;
  bool offload_optimizer, offload_param;
};

std::vector<Placement> every_placement() {
  std::vector<Placement> out;
  for (int s = 0; s <= 3; ++s) out.push_back({s, false, false});
  for (int s = 1; s <= 3; ++s) out.push_back({s, true, false});
  out.push_back({3, true, true});
  out.push_back({3, false, true});
  return out;
}

std::vector<float> weights(MlpRun run, int n, const Placement& p) {
  run.stage = p.stage;
  run.offload = {};
  run.offload.optimizer = p.offload_optimizer;
  run.offload.params = p.offload_param;
  return run_threads(run, n)[0].params;
}

std::string label(const Placement& p) {
  return cat("stage ", p.stage, p.offload_optimizer ? "+opt" : "", p.offload_param ? "+param" : "");
}

class LambStages : public ::testing::TestWithParam<Dtype> {};

TEST_P(LambStages, EveryStageAndPlacementBitIdentical) {
  for (int n : {1, 2, 3, 4}) {
    for (bool tied : {false, true}) {
      MlpRun run = lamb_run();
      run.dtype = GetParam();
      if (tied) run.shape = testing::tied_shape();
      const std::vector<float> stage0 = weights(run, n, {0, false, false});
      for (const Placement& p : every_placement()) {
        EXPECT_TRUE(same_bits(weights(run, n, p), stage0)) << label(p) << " N=" << n << " tied=" << tied;
      }
      run.device = "strict";  // device memory only through the seam
      EXPECT_TRUE(same_bits(weights(run, n, {3, false, true}), stage0)) << "strict device, N=" << n;
    }
  }
}

TEST_P(LambStages, ClippingAndAccumulationStillAgree) {
  MlpRun run = lamb_run();
  run.dtype = GetParam();
  run.clipping = 0.05f;
  run.global_batch = 24;
  run.micro_batches = 2;
  // With accumulation stages 0 and 1 reduce once per step, stages 2 and 3 every micro-batch (a
  // different sum, as with Adam): each placement agrees with the stage that reduces as it does.
  for (int n : {2, 3}) {
    const std::vector<float> once = weights(run, n, {0, false, false}), each = weights(run, n, {2, false, false});
    EXPECT_FALSE(same_bits(once, each));
    for (const Placement& p : every_placement()) {
      EXPECT_TRUE(same_bits(weights(run, n, p), p.stage <= 1 ? once : each)) << label(p) << " N=" << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LambStages, ::testing::Values(Dtype::kF32, Dtype::kBf16),
                         [](const auto& p) { return std::string(dtype_label(p.param)); });

// The trust ratio is the whole tensor's: 4 ranks, each holding a quarter of every tensor, reach
// the 1-rank weights up to the rounding of the reductions. A ratio taken per slice would not
// (the slices' norms differ), and Adam's weights differ from Lamb's by far more.
TEST(LambEngine, TrustRatioIsPerWholeTensor) {
  MlpRun run = lamb_run();
  const std::vector<float> one = weights(run, 1, {0, false, false});
  const std::vector<float> four = weights(run, 4, {3, false, false});
  const std::vector<UnitSpec> units = Mlp(run.shape).units();
  const double across_n = testing::worst_tensor_difference(units, four, one);
  EXPECT_LT(across_n, 1e-4);
  run.optimizer = OptimizerKind::kAdam;
  const double adam = testing::worst_tensor_difference(units, weights(run, 1, {0, false, false}), one);
  EXPECT_GT(adam, 100 * across_n);
  std::printf("[ measured ] Lamb N=4 stage 3 vs N=1: worst per-tensor relative difference %.3g; Adam vs Lamb at N=1: %.3g\n",
              across_n, adam);
}

// Lamb holds no more than Adam: m and v; its sums travel in one small all-gather per step.
TEST(LambEngine, LedgerAsAdamsAndOneSmallGather) {
  for (const Placement& p : every_placement()) {
    MlpRun run = lamb_run();
    run.stage = p.stage;
    run.offload.optimizer = p.offload_optimizer;
    run.offload.params = p.offload_param;
    const auto lamb = run_threads(run, 2)[0];
    run.optimizer = OptimizerKind::kAdam;
    const auto adam = run_threads(run, 2)[0];
    EXPECT_EQ(lamb.device.total_peak, adam.device.total_peak) << label(p);
    EXPECT_EQ(lamb.host.total_peak, adam.host.total_peak) << label(p);
    const int c = static_cast<int>(Collective::kAllGather);
    EXPECT_EQ(lamb.step_traffic.calls[c], adam.step_traffic.calls[c] + 1) << label(p);
  }
}

TEST(LambEngine, BadInputIsRefused) {
  MlpRun run = lamb_run();
  run.stage = 2;
  run.offload.optimizer = true;
  run.offload.delayed_update = true;
  try {
    run_threads(run, 1);
    FAIL() << "Lamb with the delayed update ran";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("Lamb with the delayed update"), std::string::npos) << e.what();
  }
  run = lamb_run();
  run.lamb.min_coeff = 2.0f;
  run.lamb.max_coeff = 1.0f;
  EXPECT_THROW(run_threads(run, 1), ConfigError);
}

}  // namespace
}  // namespace zero
