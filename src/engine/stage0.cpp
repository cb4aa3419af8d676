// Stage 0: plain data parallelism (DDP). Every rank holds everything: parameters, gradients and
// Adam's moments, 16 bytes per parameter. Gradients are all-reduced unit by unit as backward
// completes them, and every rank runs the same Adam step over all parameters.
#include "engine/stage.h"

namespace zero {
namespace {

class Stage0 final : public Stage {
 public:
  explicit Stage0(const StageContext& ctx)
      : ctx_(ctx),
        params_(ctx),
        grads_(ctx.ledger, Tier::kDevice, Category::kGradients, ctx.layout.padded_numel(), "gradients"),
        moments_(ctx.ledger, ctx.layout.padded_numel()) {}

  void fetch(int) override {}
  void release(int) override {}
  const float* params(int u) override { return params_.unit(u); }

  float* grads(int u) override { return grads_.data() + ctx_.layout.unit(u).flat_offset; }

  void begin_micro_batch(bool, bool boundary) override { boundary_ = boundary; }

  void reduce_gradients(int u) override {
    if (!boundary_) return;  // accumulate locally until the last micro-batch
    const UnitPlace& unit = ctx_.layout.unit(u);
    pending_.add(ctx_.comm.all_reduce_async({grads_.data() + unit.flat_offset, unit.padded}));
  }

  void finish_reduction(int micro_batches) override {
    pending_.wait_all();
    average_gradients(grads_.data(), grads_.size(), ctx_.comm.size() * micro_batches);
  }

  std::vector<std::span<const float>> gradient_slices() override {
    std::vector<std::span<const float>> out;
    for (int u = 0; u < ctx_.layout.num_units(); ++u) {
      const UnitPlace& unit = ctx_.layout.unit(u);
      out.emplace_back(grads_.data() + unit.flat_offset + static_cast<std::size_t>(ctx_.comm.rank()) * unit.slice, unit.slice);
    }
    return out;
  }

  void scale_gradients(float c) override { scale(grads_.data(), grads_.size(), c); }

  void optimizer_step(const AdamStep& s) override {
    for (int u = 0; u < ctx_.layout.num_units(); ++u) {
      const std::size_t o = ctx_.layout.unit(u).flat_offset;
      adam_segments(s, ctx_.layout.unit_segments(u), params_.unit(u), grads_.data() + o,
                    moments_.m.data() + o, moments_.v.data() + o);
    }
    std::fill(grads_.span().begin(), grads_.span().end(), 0.0f);  // the next backward accumulates from zero
  }

  void gather_parameters() override {}

 private:
  StageContext ctx_;
  WholeParameters params_;
  Buffer grads_;   // (padded_numel) f32, device tier: all gradients, whole
  AdamMoments moments_;  // (padded_numel) each
  bool boundary_ = true;
  PendingOps pending_;  // last: destroyed first
};

}  // namespace

std::unique_ptr<Stage> make_stage0(const StageContext& ctx) { return std::make_unique<Stage0>(ctx); }

}  // namespace zero
