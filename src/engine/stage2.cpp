// Stage 2: optimizer state and gradients sharded. Parameters stay whole (4 bytes per
// parameter); this rank keeps only its slice of the reduced gradients and of Adam's moments
// (12/N bytes per parameter). Backward writes each unit's gradient into a whole buffer that
// lives only until the unit is complete: it is then reduce-scattered into the gradient shard
// and freed. After the step, an all-gather makes the parameters whole again.
#include "engine/stage.h"

namespace zero {
namespace {

class Stage2 final : public ShardedGradientStage {
 public:
  explicit Stage2(const StageContext& ctx) : ShardedGradientStage(ctx), params_(ctx) {}

  void fetch(int) override {}
  void release(int) override {}
  const float* params(int u) override { return params_.unit(u); }
  void gather_parameters() override { params_.gather(); }
 private:
  float* my_params(int u) override { return params_.slice(u).data(); }

  WholeParameters params_;
};

}  // namespace

std::unique_ptr<Stage> make_stage2(const StageContext& ctx) { return std::make_unique<Stage2>(ctx); }

}  // namespace zero
