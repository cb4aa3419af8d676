// Stage 1: optimizer state sharded. Parameters and gradients stay whole on every rank; the
// optimizer's state exists only for this rank's shard. At the last micro-batch each unit's
// gradient is reduce-scattered in place, into this rank's slice of the whole gradient buffer, as
// backward completes it; the optimizer updates this rank's slice of the parameters; all-gathers
// then make the parameters whole again, each waited on just before its unit's next forward.
#include "engine/stage.h"

namespace zero {
namespace {

class Stage1 final : public Stage {
 public:
  explicit Stage1(const StageContext& ctx)
      : ctx_(ctx), params_(ctx), grads_(ctx.device.alloc(Tier::kDevice, Category::kGradients, ctx.layout.padded_numel(), "gradients", ctx.dtype)) {}

  void fetch(int u) override { params_.wait(u); }
  void release(int) override {}
  DeviceSpan params(int u) override { return params_.unit(u); }
  DeviceSpan grads(int u) override { return grads_.sub(ctx_.layout.unit(u).flat_offset, ctx_.layout.unit(u).padded); }

  void begin_micro_batch(bool first, bool boundary) override {
    if (first) ctx_.device.fill(ctx_.device.compute(), grads_.span(), 0.0f);
    boundary_ = boundary;
  }

  void reduce_gradients(int u) override {
    if (!boundary_) return;  // accumulate locally until the last micro-batch
    optimizer_->reduced(u, my_slice(u), ctx_.comm.reduce_scatter(grads(u), my_slice(u), ctx_.layout.unit(u).name));
  }

  void finish_reduction() override { wait_parameter_gathers(); }  // the optimizer writes the slices next

  std::vector<OptimizerPart> optimizer_parts() override {
    return slice_parts(ctx_.layout, ctx_.comm.rank(), [this](int u) { return params_.slice(u); });
  }
  bool sheds_gradients() const override { return false; }

  void gather_parameters() override { params_.start_gather(); }
  void wait_parameter_gathers() override { params_.wait_all(); }

 private:
  // This rank's slice of unit u's gradient, inside the whole buffer.
  DeviceSpan my_slice(int u) {
    const UnitPlace& unit = ctx_.layout.unit(u);
    return grads(u).sub(ctx_.layout.slice_offset(u, ctx_.comm.rank()), unit.slice);
  }

  StageContext ctx_;
  WholeParameters params_;
  DeviceBuffer grads_;  // (padded_numel) compute dtype, device tier: all gradients, whole
  bool boundary_ = true;
};

}  // namespace

std::unique_ptr<Stage> make_stage1(const StageContext& ctx) { return std::make_unique<Stage1>(ctx); }

}  // namespace zero
