// Stage 3: parameters sharded too. A rank keeps only its slice of every unit's parameters,
// reduced gradients and Adam's moments: 16/N bytes per parameter. A unit is all-gathered into a
// temporary whole buffer (category gathered_parameters) just before its forward, and again just
// before its backward, and freed after; the next unit's gather is started while the current one
// computes (prefetch), so about two units are whole at a time. Gradients are reduce-scattered
// unit by unit as in stage 2. The parameters stay sharded after the step: nothing to gather.
#include <optional>

#include "common/error.h"
#include "engine/stage.h"
#include "partition/init.h"

namespace zero {
namespace {

class Stage3 final : public ShardedGradientStage {
 public:
  explicit Stage3(const StageContext& ctx)
      : ShardedGradientStage(ctx),
        param_shard_(ctx.ledger, Tier::kDevice, Category::kParameters, ctx.layout.shard_numel(), "parameter shard"),
        gathered_(ctx.layout.num_units()) {
    for (int u = 0; u < ctx.layout.num_units(); ++u) {
      const UnitPlace& unit = ctx.layout.unit(u);
      init_segments(unit, ctx.layout.slice_segments(u, ctx.comm.rank()), ctx.seed, my_params(u));
    }
  }

  void prefetch(int u) override { start_gather(u); }

  void fetch(int u) override {
    start_gather(u);
    Gathered& g = *gathered_[u];
    g.done.wait();
    ++g.users;
  }

  void release(int u) override {
    Gathered& g = gathered_.at(u).value();
    ZERO_CHECK(g.users > 0, "release without fetch of unit ", u);
    if (--g.users == 0) gathered_[u].reset();
  }

  const float* params(int u) override {
    ZERO_CHECK(gathered_.at(u) && gathered_[u]->users > 0, "unit ", u, " read while not fetched");
    return gathered_[u]->whole.data();
  }

  void gather_parameters() override {}

 private:
  struct Gathered {
    Buffer whole;  // (unit padded) f32, device tier, gathered parameters
    Handle done;   // the all-gather filling it
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

  float* my_params(int u) override { return param_shard_.data() + ctx_.layout.unit(u).shard_offset; }

  void start_gather(int u) {
    if (gathered_.at(u)) return;  // already whole or on its way
    const UnitPlace& unit = ctx_.layout.unit(u);
    // Allocate first: a refused allocation must not leave the unit marked as gathered.
    Buffer whole(ctx_.ledger, Tier::kDevice, Category::kGatheredParameters, unit.padded,
                 cat("gathered parameters of unit '", unit.name, "'"));
    Gathered& g = gathered_[u].emplace();
    g.whole = std::move(whole);
    g.done = ctx_.comm.all_gather_async({my_params(u), unit.slice}, g.whole.span());
  }

  Buffer param_shard_;  // (shard_numel) f32, device tier: this rank's parameters
  std::vector<std::optional<Gathered>> gathered_;  // (num_units) whole units now alive
};

}  // namespace

std::unique_ptr<Stage> make_stage3(const StageContext& ctx) { return std::make_unique<Stage3>(ctx); }

}  // namespace zero
