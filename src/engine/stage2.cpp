// Stage 2: optimizer state and gradients sharded. Parameters stay whole; backward writes each
// unit's gradient into a whole buffer that lives only until the unit is complete: it is then
// reduce-scattered into the optimizer's gradient shard and freed. After the step, all-gathers
// make the parameters whole again, each waited on just before its unit's next forward.
#include "engine/stage.h"

namespace zero {
namespace {

class Stage2 final : public Stage {
 public:
  explicit Stage2(const StageContext& ctx) : ctx_(ctx), params_(ctx), grads_(ctx) {}

  void fetch(int u) override { params_.wait(u); }
  void release(int) override {}
  DeviceSpan params(int u) override { return params_.unit(u); }

  void begin_micro_batch(bool, bool) override {}
  DeviceSpan grads(int u) override { return grads_.get(u); }
  void reduce_gradients(int u) override { grads_.reduce(u, *optimizer_); }
  void finish_reduction() override {
    grads_.finish();
    wait_parameter_gathers();  // the optimizer writes the slices next
  }

  std::vector<OptimizerPart> optimizer_parts() override {
    return slice_parts(ctx_.layout, ctx_.comm.rank(), [this](int u) { return params_.slice(u); });
  }
  bool sheds_gradients() const override { return true; }

  void gather_parameters() override { params_.start_gather(); }
  void wait_parameter_gathers() override { params_.wait_all(); }

 private:
  StageContext ctx_;
  WholeParameters params_;
  TransientGradients grads_;
};

}  // namespace

std::unique_ptr<Stage> make_stage2(const StageContext& ctx) { return std::make_unique<Stage2>(ctx); }

}  // namespace zero
