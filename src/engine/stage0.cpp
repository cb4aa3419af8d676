// Stage 0: plain data parallelism (DDP). Every rank holds everything: parameters, gradients and
// the optimizer's state for every element. Gradients are all-reduced unit by unit as backward
// completes them (at the last micro-batch; earlier ones accumulate locally), and every rank
// updates every element: the optimizer's parts are the whole units.
#include "engine/stage.h"

namespace zero {
namespace {

class Stage0 final : public Stage {
 public:
  explicit Stage0(const StageContext& ctx)
      : ctx_(ctx), params_(ctx), grads_(ctx.device.alloc(Tier::kDevice, Category::kGradients, ctx.layout.padded_numel(), "gradients", ctx.dtype)) {}

  void fetch(int) override {}
  void release(int) override {}
  DeviceSpan params(int u) override { return params_.unit(u); }
  DeviceSpan grads(int u) override { return grads_.sub(ctx_.layout.unit(u).flat_offset, ctx_.layout.unit(u).padded); }

  void begin_micro_batch(bool first, bool boundary) override {
    if (first) ctx_.device.fill(ctx_.device.compute(), grads_.span(), 0.0f);  // the step accumulates from zero
    boundary_ = boundary;
  }

  void reduce_gradients(int u) override {
    if (!boundary_) return;  // accumulate locally until the last micro-batch
    if (optimizer_->local_gradients()) return optimizer_->reduced(u, grads(u), Handle());  // 1-bit Adam: kept local
    optimizer_->reduced(u, grads(u), ctx_.comm.all_reduce(grads(u), ctx_.layout.unit(u).name));
  }

  void finish_reduction() override {}  // the optimizer waits for the reductions it was handed

  std::vector<OptimizerPart> optimizer_parts() override {
    std::vector<OptimizerPart> parts;
    for (int u = 0; u < ctx_.layout.num_units(); ++u) {
      const UnitPlace& unit = ctx_.layout.unit(u);
      parts.push_back({u, params_.unit(u), ctx_.layout.unit_segments(u), unit.flat_offset,
                       ctx_.layout.slice_offset(u, ctx_.comm.rank()), unit.slice});
    }
    return parts;
  }
  bool sheds_gradients() const override { return false; }

 private:
  StageContext ctx_;
  WholeParameters params_;
  DeviceBuffer grads_;  // (padded_numel) compute dtype, device tier: all gradients, whole
  bool boundary_ = true;
};

}  // namespace

std::unique_ptr<Stage> make_stage0(const StageContext& ctx) { return std::make_unique<Stage0>(ctx); }

}  // namespace zero
