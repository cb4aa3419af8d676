// Stage 2: optimizer state and gradients sharded. Parameters stay whole (4 bytes per
// parameter); this rank keeps only its slice of the reduced gradients and of Adam's moments
// (12/N bytes per parameter). Backward writes each unit's gradient into a whole buffer that
// lives only until the unit is complete: it is then reduce-scattered into the gradient shard
// and freed. After the step, an all-gather makes the parameters whole again.
#include "engine/stage.h"

namespace zero {
namespace {

class Stage2 final : public Stage {
 public:
  explicit Stage2(const StageContext& ctx)
      : ctx_(ctx),
        params_(ctx),
        grad_shard_(ctx.ledger, Tier::kDevice, Category::kGradients, ctx.layout.shard_numel(), "gradient shard"),
        moments_(ctx.ledger, ctx.layout.shard_numel()),
        transient_(ctx, grad_shard_.data()) {}

  void fetch(int) override {}
  void release(int) override {}
  const float* params(int u) override { return params_.unit(u); }

  void begin_micro_batch(bool first, bool) override { transient_.begin_micro_batch(!first); }
  float* grads(int u) override { return transient_.get(u); }
  void reduce_gradients(int u) override { transient_.reduce(u); }

  void finish_reduction(int micro_batches) override {
    transient_.finish();
    average_gradients(grad_shard_.data(), grad_shard_.size(), ctx_.comm.size() * micro_batches);
  }

  std::vector<std::span<const float>> gradient_slices() override { return shard_slices(ctx_.layout, grad_shard_.data()); }
  void scale_gradients(float c) override { scale(grad_shard_.data(), grad_shard_.size(), c); }

  void optimizer_step(const AdamStep& s) override {
    for (int u = 0; u < ctx_.layout.num_units(); ++u) {
      const std::size_t o = ctx_.layout.unit(u).shard_offset;
      adam_segments(s, ctx_.layout.slice_segments(u, ctx_.comm.rank()), params_.slice(u).data(), grad_shard_.data() + o,
                    moments_.m.data() + o, moments_.v.data() + o);
    }
  }

  void gather_parameters() override { params_.gather(); }

  void copy_full_parameters(float* out) override { params_.copy_unpadded_to(out); }

 private:
  StageContext ctx_;
  WholeParameters params_;
  Buffer grad_shard_;  // (shard_numel) f32, device tier: this rank's reduced gradients
  AdamMoments moments_;  // (shard_numel) each
  TransientGradients transient_;
};

}  // namespace

std::unique_ptr<Stage> make_stage2(const StageContext& ctx) { return std::make_unique<Stage2>(ctx); }

}  // namespace zero
