// Stage 3: parameters sharded too. A rank keeps only its slice of every unit's parameters (in
// the tier the placement gives it: the host with offload_param), and the optimizer its slice of
// the gradients and state. A unit is all-gathered into a temporary whole buffer (category
// gathered_parameters) just before its forward, and again just before its backward, and freed
// after; the next unit's gather starts while the current one computes (prefetch). A shard in the
// host tier is first copied to a device staging slice, freed once the gather has completed.
// Gradients are reduce-scattered unit by unit as in stage 2. Nothing to gather after the step.
#include "common/error.h"
#include "engine/stage.h"

namespace zero {
namespace {

class Stage3 final : public Stage {
 public:
  explicit Stage3(const StageContext& ctx)
      : ctx_(ctx),
        shard_(ctx.device.alloc(ctx.param_shard_tier, Category::kParameters, ctx.layout.shard_numel(), "parameter shard")),
        grads_(ctx),
        gathered_(ctx.layout.num_units()) {
    for (int u = 0; u < ctx.layout.num_units(); ++u) {
      ctx.device.init(ctx.device.compute(), ctx.layout.unit(u), ctx.layout.slice_segments(u, ctx.comm.rank()), ctx.seed, my_params(u));
    }
  }

  void prefetch(int u) override { start_gather(u); }

  void fetch(int u) override {
    start_gather(u);
    Gathered& g = *gathered_[u];
    g.done.wait();
    g.staging.reset();
    ++g.users;
  }

  void release(int u) override {
    Gathered& g = gathered_.at(u).value();
    ZERO_CHECK(g.users > 0, "release without fetch of unit ", u);
    if (--g.users == 0) gathered_[u].reset();
  }

  DeviceSpan params(int u) override {
    ZERO_CHECK(gathered_.at(u) && gathered_[u]->users > 0, "unit ", u, " read while not fetched");
    return gathered_[u]->whole.span();
  }

  void begin_micro_batch(bool, bool) override {}
  DeviceSpan grads(int u) override { return grads_.get(u); }
  void reduce_gradients(int u) override { grads_.reduce(u, *optimizer_); }
  void finish_reduction() override { grads_.finish(); }

  std::vector<OptimizerPart> optimizer_parts() override {
    return slice_parts(ctx_.layout, ctx_.comm.rank(), [this](int u) { return my_params(u); });
  }
  bool sheds_gradients() const override { return true; }

 private:
  struct Gathered {
    DeviceBuffer staging;  // (slice) f32, device tier, comm: this rank's slice from a host-tier shard
    DeviceBuffer whole;    // (unit padded) f32, device tier, gathered parameters
    Handle done;           // the all-gather filling it
    int users = 0;
    Gathered() = default;
    Gathered(const Gathered&) = delete;
    Gathered& operator=(const Gathered&) = delete;
    ~Gathered() {  // never free a buffer the comm thread may still be writing
      try {
        done.wait();
      } catch (...) {
      }
    }
  };

  DeviceSpan my_params(int u) const { return shard_.sub(ctx_.layout.unit(u).shard_offset, ctx_.layout.unit(u).slice); }

  void start_gather(int u) {
    if (gathered_.at(u)) return;  // already whole or on its way
    const UnitPlace& unit = ctx_.layout.unit(u);
    Device& dev = ctx_.device;
    // Allocate first: a refused allocation must not leave the unit marked as gathered.
    DeviceBuffer whole = dev.alloc(Tier::kDevice, Category::kGatheredParameters, unit.padded,
                                   cat("gathered parameters of unit '", unit.name, "'"));
    DeviceBuffer staging;
    DeviceSpan source = my_params(u);
    if (source.tier() != Tier::kDevice) {  // collectives read device memory: bring the slice over first
      staging = dev.alloc(Tier::kDevice, Category::kCommBuffers, unit.slice, "parameter slice from the host");
      dev.copy(dev.copies(), staging.span(), source);
      dev.copies().synchronize();
      source = staging.span();
    }
    Gathered& g = gathered_[u].emplace();
    g.whole = std::move(whole);
    g.staging = std::move(staging);
    g.done = ctx_.comm.all_gather(source, g.whole.span(), ctx_.layout.unit(u).name);
  }

  StageContext ctx_;
  DeviceBuffer shard_;  // (shard_numel) f32, param_shard_tier: this rank's parameters
  TransientGradients grads_;
  std::vector<std::optional<Gathered>> gathered_;  // (num_units) whole units now alive
};

}  // namespace

std::unique_ptr<Stage> make_stage3(const StageContext& ctx) { return std::make_unique<Stage3>(ctx); }

}  // namespace zero
