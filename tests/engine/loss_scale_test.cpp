// fp16 dynamic loss scaling in the engine, on thread ranks: a scale that overflows on purpose is
// lowered by DeepSpeed's rule (the sequence of scales and skipped steps equals the plain
// reference fed with the same overflows), identically on every rank and in every stage, and
// training then proceeds; an overflow on one rank skips the step on all; a scale that reaches
// its minimum and still overflows stops the run naming the step.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "comm/thread_world.h"
#include "common/error.h"
#include "engine/mlp_run.h"
#include "optim/loss_scaler_reference.h"

namespace zero {
namespace {

using testing::MlpRun;
using testing::RankResult;
using testing::run_threads;
using testing::same_bits;

MlpRun overflowing_run(int stage) {
  MlpRun run;
  run.dtype = Dtype::kF16;
  run.stage = stage;
  run.steps = 40;
  run.scaler.initial_scale_power = 40;  // gradients of order 1 times 2^40 overflow fp16 (max 65504)
  run.scaler.window = 5;
  return run;
}

// The plain rule (optim/loss_scaler_reference.h), fed the overflows the engine saw.
std::vector<float> reference_scales(const LossScalerConfig& c, const std::vector<bool>& overflows) {
  testing::ReferenceScaler ref(c);
  std::vector<float> out;
  for (bool o : overflows) {
    out.push_back(static_cast<float>(ref.cur_scale));
    ref.update_scale(o);
  }
  return out;
}

TEST(LossScaling, OverflowingScaleFollowsDeepSpeedsRuleInEveryStage) {
  for (int n : {2, 4}) {
    std::vector<float> stage0;
    for (int stage = 0; stage <= 3; ++stage) {
      const MlpRun run = overflowing_run(stage);
      const auto ranks = run_threads(run, n);
      const RankResult& r0 = ranks[0];
      for (int r = 1; r < n; ++r) {
        EXPECT_EQ(ranks[r].skipped, r0.skipped) << "rank " << r;
        EXPECT_EQ(ranks[r].loss_scales, r0.loss_scales) << "rank " << r;
        EXPECT_TRUE(same_bits(ranks[r].params, r0.params));
      }
      EXPECT_EQ(r0.loss_scales, reference_scales(run.scaler, r0.skipped)) << "stage " << stage << " N=" << n;
      int skipped = 0;
      for (bool s : r0.skipped) skipped += s;
      EXPECT_GE(skipped, 25) << "2^40 must come down to fp16's range, one halving per overflow after the hysteresis";
      EXPECT_FALSE(r0.skipped.back()) << "training proceeds once the scale fits";
      EXPECT_LT(r0.losses.back(), r0.losses.front()) << "and it learns";
      if (stage == 0) stage0 = r0.params;
      EXPECT_TRUE(same_bits(r0.params, stage0)) << "stage " << stage << " N=" << n;
    }
  }
}

// The test MLP, with an infinite gradient injected on one rank at one step (after backward of
// the first unit, so into unit 0's gradient, element 0: after reduce-scatter it lands on rank
// 0's shard only, so the other ranks see only finite gradients of their own).
class InjectingMlp final : public Module {
 public:
  InjectingMlp(MlpShape shape, bool inject) : mlp_(std::move(shape)), inject_(inject) {}
  Mlp& mlp() { return mlp_; }
  void set_step(int s) { step_ = s; }
  std::vector<UnitSpec> units() const override { return mlp_.units(); }
  void forward(int u, const UnitViews& v) override { mlp_.forward(u, v); }
  void backward(int u, const UnitViews& v) override {
    mlp_.backward(u, v);
    if (inject_ && step_ == 3 && u == 0) v.grad(0, 0)[0] = std::numeric_limits<float>::infinity();
  }
  float loss() const override { return mlp_.loss(); }

 private:
  Mlp mlp_;
  bool inject_;
  int step_ = 0;
};

// Dynamic and static scales alike (DeepSpeed skips an overflowing step under a static
// loss_scale too, leaving the scale as it is; zero once applied it, inf gradient and all), with
// and without offload, and with the delayed update under the static scale.
TEST(LossScaling, AnOverflowOnOneRankSkipsTheStepOnAll) {
  const int n = 2;
  for (double static_scale : {0.0, 128.0})
  for (int stage = 0; stage <= 3; ++stage)
    for (int offload : {0, 1, 2}) {  // none, optimizer, optimizer with the delayed update
      if ((offload && stage == 0) || (offload == 2 && static_scale == 0)) continue;
      SCOPED_TRACE(cat("static scale ", static_scale, ", stage ", stage, ", offload ", offload));
      MlpRun run;
      run.dtype = Dtype::kF16;
      run.stage = stage;
      run.scaler.static_scale = static_scale;
      run.offload.optimizer = offload > 0;
      run.offload.delayed_update = offload == 2;
      ThreadWorld world(n);
      std::vector<std::vector<bool>> skipped(n);
      std::vector<std::vector<float>> params(n);
      world.run([&](int r) {
        Ledger ledger;
        auto comm = world.communicator(r, &ledger);
        InjectingMlp model(run.shape, r == n - 1);
        Engine engine(testing::engine_config(run), model, *comm, ledger);
        const int rows = run.global_batch / n;
        for (int s = 0; s < 6; ++s) {
          model.set_step(s);
          model.mlp().set_batch(mlp_synthetic_batch(run.shape, run.seed, s, r * rows, rows));
          engine.forward_backward(true);
          skipped[r].push_back(engine.step().skipped);
          if (static_scale > 0) {
            EXPECT_EQ(engine.loss_scale(), static_scale) << "a static scale never changes";
          }
        }
        params[r] = engine.full_parameters();
      });
      const std::vector<bool> expected = {false, false, false, true, false, false};
      for (int r = 0; r < n; ++r) EXPECT_EQ(skipped[r], expected) << "stage " << stage << " offload " << offload << " rank " << r;
      EXPECT_TRUE(same_bits(params[0], params[1]));
      for (float p : params[0]) ASSERT_TRUE(std::isfinite(p)) << "the overflowing step must not reach the weights";
    }
}

TEST(LossScaling, OverflowAtTheMinimumScaleStopsNamingTheStep) {
  MlpRun run = overflowing_run(1);
  run.scaler.min_scale = std::ldexp(1.0, 38);  // reached after a few overflows, and still far too large
  try {
    run_threads(run, 2);
    FAIL() << "the run must stop";
  } catch (const TrainingError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("overflowed at step "), std::string::npos) << m;
    EXPECT_NE(m.find("min_loss_scale"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace zero
