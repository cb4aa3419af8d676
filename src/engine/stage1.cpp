// Stage 1: optimizer state sharded. Parameters and gradients stay whole on every rank
// (8 bytes per parameter); Adam's moments exist only for this rank's shard (8/N bytes per
// parameter). Each unit's gradient is reduce-scattered into this rank's slice of the whole
// gradient buffer as backward completes it; the rank updates its slice of the parameters; an
// all-gather then makes the parameters whole again.
#include "engine/stage.h"

namespace zero {
namespace {

class Stage1 final : public Stage {
 public:
  explicit Stage1(const StageContext& ctx)
      : ctx_(ctx),
        params_(ctx),
        grads_(ctx.ledger, Tier::kDevice, Category::kGradients, ctx.layout.padded_numel(), "gradients"),
        moments_(ctx.ledger, ctx.layout.shard_numel()) {}

  void fetch(int) override {}
  void release(int) override {}
  const float* params(int u) override { return params_.unit(u); }
  float* grads(int u) override { return grads_.data() + ctx_.layout.unit(u).flat_offset; }

  void begin_micro_batch(bool, bool boundary) override { boundary_ = boundary; }

  void reduce_gradients(int u) override {
    if (!boundary_) return;  // accumulate locally until the last micro-batch
    // In place: this rank's slice of the unit's gradient receives the sum over ranks.
    pending_.add(ctx_.comm.reduce_scatter_async({grads(u), ctx_.layout.unit(u).padded}, my_slice(grads_, u)));
  }

  void finish_reduction(int micro_batches) override {
    pending_.wait_all();
    for (int u = 0; u < ctx_.layout.num_units(); ++u) {
      auto g = my_slice(grads_, u);
      average_gradients(g.data(), g.size(), ctx_.comm.size() * micro_batches);
    }
  }

  std::vector<std::span<const float>> gradient_slices() override {
    std::vector<std::span<const float>> out;
    for (int u = 0; u < ctx_.layout.num_units(); ++u) out.emplace_back(my_slice(grads_, u));
    return out;
  }

  void scale_gradients(float c) override {
    for (int u = 0; u < ctx_.layout.num_units(); ++u) scale(my_slice(grads_, u).data(), my_slice(grads_, u).size(), c);
  }

  void optimizer_step(const AdamStep& s) override {
    for (int u = 0; u < ctx_.layout.num_units(); ++u) {
      const std::size_t o = ctx_.layout.unit(u).shard_offset;
      adam_segments(s, ctx_.layout.slice_segments(u, ctx_.comm.rank()), params_.slice(u).data(),
                    my_slice(grads_, u).data(), moments_.m.data() + o, moments_.v.data() + o);
    }
    std::fill(grads_.span().begin(), grads_.span().end(), 0.0f);
  }

  void gather_parameters() override { params_.gather(); }

 private:
  // This rank's slice of unit u inside a whole (padded_numel) buffer.
  std::span<float> my_slice(Buffer& whole, int u) {
    const UnitPlace& unit = ctx_.layout.unit(u);
    return {whole.data() + unit.flat_offset + static_cast<std::size_t>(ctx_.comm.rank()) * unit.slice, unit.slice};
  }

  StageContext ctx_;
  WholeParameters params_;
  Buffer grads_;         // (padded_numel) f32, device tier: all gradients, whole
  AdamMoments moments_;  // (shard_numel) each
  bool boundary_ = true;
  PendingOps pending_;  // last: destroyed first
};

}  // namespace

std::unique_ptr<Stage> make_stage1(const StageContext& ctx) { return std::make_unique<Stage1>(ctx); }

}  // namespace zero
