// Stage 3: parameters sharded too. A rank keeps only its slice of every unit's parameters (in
// the tier the placement gives it: the host with offload_param), and the optimizer its slice of
// the gradients and state. A unit is all-gathered into a temporary whole buffer (category
// gathered_parameters) before its forward, and again before its backward, and freed after its
// use; a shard in the host tier is first copied to a device staging slice, freed once the gather
// has completed; on the NVMe tier the slice is first read from disk (param_home.h), the reads
// started ahead of the gathers. Gradients are reduce-scattered unit by unit as in stage 2.
//
// The schedule (Stage3Options, DeepSpeed's stage3_* keys): while a unit computes, the units used
// next are gathered ahead (prefetch bucket), never beyond the live cap; a unit used again soon
// (reuse distance) stays whole in between; a unit below the persistence threshold stays whole
// for the run and is all-gathered once after each step, as stage 2 does for every unit.
// How a gather runs (plain, ZeRO++'s int8 qwZ, hpZ's backward inside the node) is
// ParameterGather's (param_gather.h); the stage tells it whether the use is forward or backward.
#include <cstdint>

#include "common/error.h"
#include "engine/param_home.h"
#include "engine/param_gather.h"
#include "engine/stage.h"

namespace zero {
namespace {

class Stage3 final : public Stage {
 public:
  explicit Stage3(const StageContext& ctx)
      : ctx_(ctx),
        o_(ctx.stage3),
        home_(ctx),
        grads_(ctx),
        gather_(ctx),
        gathered_(ctx.layout.num_units()),
        persistent_(ctx.layout.num_units()),
        persistent_gathers_(ctx.layout.num_units()) {
    for (int u = 0; u < ctx.layout.num_units(); ++u) {
      const UnitPlace& unit = ctx.layout.unit(u);
      if (persists_whole(ctx, u)) {
        persistent_[u] = ctx.device.alloc(Tier::kDevice, Category::kParameters, unit.padded,
                                          cat("parameters of unit '", unit.name, "' (persistent)"), ctx.dtype);
        ctx.device.init(ctx.device.compute(), unit, ctx.layout.unit_segments(u), ctx.seed, persistent_[u].span());
      } else {
        home_.initialise(u, ctx.layout.slice_segments(u, ctx.comm.rank()));
      }
    }
  }

  ~Stage3() override {
    for (const Handle& h : persistent_gathers_) {
      try {
        h.wait();
      } catch (...) {
      }
    }
  }

  void in_use(int position) override {
    position_ = position;
    if (home_.on_disk()) read_ahead(position);
    if (o_.prefetch_bucket < 0) prefetch_next(position);
    else prefetch_bucket(position);
  }

  void fetch(int u) override {
    if (persistent(u)) {
      wait_persistent(u);
      return;
    }
    start_gather(u);
    Gathered& g = *gathered_[u];
    g.done.wait();
    g.staging.reset();
    gather_.arrived(u, g.whole.span());
    ++g.users;
  }

  void release(int u) override {
    if (persistent(u)) return;
    Gathered& g = gathered_.at(u).value();
    ZERO_CHECK(g.users > 0, "release without fetch of unit ", u);
    if (--g.users == 0 && !reused_soon(u)) free_gathered(u);
  }

  DeviceSpan params(int u) override {
    if (persistent(u)) return persistent_[u].span();
    ZERO_CHECK(gathered_.at(u) && gathered_[u]->users > 0, "unit ", u, " read while not fetched");
    return gathered_[u]->whole.span();
  }

  void begin_exact_reads() override { gather_.set_exact(true); }
  void end_exact_reads() override { gather_.set_exact(false); }
  void begin_micro_batch(bool, bool) override {}
  DeviceSpan grads(int u) override { return grads_.get(u); }
  void reduce_gradients(int u) override { grads_.reduce(u, *optimizer_); }
  void end_of_uses() override {
    position_ = -1;
    for (int u = 0; u < ctx_.layout.num_units(); ++u)
      if (gathered_[u] && gathered_[u]->users == 0) free_gathered(u);
    home_.drop_reads();
  }

  void finish_reduction() override {
    grads_.finish();
    end_of_uses();  // nothing is reused across a step
    gather_.parameters_changed();
    wait_parameter_gathers();  // the optimizer writes the slices next
  }

  std::vector<OptimizerPart> optimizer_parts() override {
    return slice_parts(ctx_.layout, ctx_.comm.rank(), [this](int u) { return persistent(u) ? persistent_slice(u) : my_params(u); });
  }
  bool sheds_gradients() const override { return true; }

  void gather_parameters() override {
    for (int u = 0; u < ctx_.layout.num_units(); ++u)
      if (persistent(u)) persistent_gathers_[u] = ctx_.comm.all_gather(persistent_slice(u), persistent_[u].span(), ctx_.layout.unit(u).name);
  }
  void wait_parameter_gathers() override {
    for (int u = 0; u < ctx_.layout.num_units(); ++u)
      if (persistent(u)) wait_persistent(u);
  }
  ParamSink* param_sink() override { return home_.on_disk() ? &home_ : nullptr; }
  ShardOptimizer::DiskTraffic disk_traffic() const override { return home_.traffic(); }

 private:
  struct Gathered {
    DeviceBuffer staging;  // (slice) compute dtype, device tier, comm: this rank's slice from a host-tier shard
    DeviceBuffer whole;    // (unit padded) compute dtype, device tier, gathered parameters
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

  bool persistent(int u) const { return !persistent_[u].empty(); }
  DeviceSpan my_params(int u) const { return home_.part(u); }
  DeviceSpan persistent_slice(int u) const {
    const UnitPlace& p = ctx_.layout.unit(u);
    return persistent_[u].sub(ctx_.layout.slice_offset(u, ctx_.comm.rank()), p.slice);
  }
  std::int64_t padded(int u) const { return static_cast<std::int64_t>(ctx_.layout.unit(u).padded); }

  void wait_persistent(int u) {
    Handle h = std::move(persistent_gathers_[u]);
    persistent_gathers_[u] = Handle();
    h.wait();
  }

  // Zero's default: the next unit, when the current use reads one unit only (a unit that borrows
  // another already has two whole), and only within the pass (forward or backward).
  void prefetch_next(int position) {
    const int units = ctx_.layout.num_units();
    const int next = position + 1;
    if (next == units || next == 2 * units || units_used_at(ctx_.layout, position).size() != 1) return;
    const int u = next < units ? next : 2 * units - 1 - next;
    if (!persistent(u)) start_gather(u);
  }

  // The uses after `position`, in order, while they add up to at most the bucket; those not whole
  // yet are gathered, unless that would pass the live cap.
  void prefetch_bucket(int position) {
    std::int64_t ahead = 0;
    for (int q = position + 1; q < 2 * ctx_.layout.num_units(); ++q) {
      for (int v : units_used_at(ctx_.layout, q)) {
        if (persistent(v)) continue;
        if (ahead + padded(v) > o_.prefetch_bucket) return;
        if (!gathered_[v]) {
          if (live_ + padded(v) > o_.max_live) return;
          start_gather(v);
        }
        ahead += padded(v);
      }
    }
  }

  // Unit u is used again in this micro-batch after fewer than max_reuse_distance elements of
  // other uses.
  bool reused_soon(int u) const {
    if (o_.max_reuse_distance == 0 || position_ < 0) return false;
    std::int64_t between = 0;
    for (int q = position_ + 1; q < 2 * ctx_.layout.num_units() && between < o_.max_reuse_distance; ++q) {
      const std::vector<int> used = units_used_at(ctx_.layout, q);
      for (int v : used)
        if (v == u) return true;
      for (int v : used) between += padded(v);
    }
    return false;
  }

  void start_gather(int u) {
    if (gathered_.at(u)) return;  // already whole or on its way
    const UnitPlace& unit = ctx_.layout.unit(u);
    Device& dev = ctx_.device;
    // Allocate first: a refused allocation must not leave the unit marked as gathered. Not zeroed:
    // the gather writes every element (zeroing 28 MiB a unit at the 50m bench model cost more
    // than the gather's copies).
    DeviceBuffer whole = dev.alloc(Tier::kDevice, Category::kGatheredParameters, unit.padded,
                                   cat("gathered parameters of unit '", unit.name, "'"), ctx_.dtype, false);
    DeviceBuffer staging;
    const bool backward = next_use_is_backward(u);
    const bool secondary = gather_.from_secondary(backward);  // hpZ's backward reads the node's copy, not this slice
    DeviceSpan source = home_.on_disk() && !secondary ? home_.host_slice(u) : my_params(u);
    if (source.tier() != Tier::kDevice && !secondary) {  // collectives read device memory: bring the slice over first
      staging = dev.alloc(Tier::kDevice, Category::kCommBuffers, unit.slice, "parameter slice from the host", ctx_.dtype, false);
      dev.copy(dev.copies(), staging.span(), source);
      dev.copies().synchronize();
      source = staging.span();
    }
    home_.done_with(u);
    Gathered& g = gathered_[u].emplace();
    g.whole = std::move(whole);
    g.staging = std::move(staging);
    g.done = gather_.start(u, source, g.whole.span(), backward);
    live_ += padded(u);
  }

  // On the NVMe tier: the disk reads of the units used after `position` and not yet whole start
  // now, as far as the buffers go, so that they land while this use computes and the gathers
  // ahead of the next ones (prefetch) find their slices in host memory.
  void read_ahead(int position) {
    const int units = ctx_.layout.num_units();
    for (int q = position + 1; q < 2 * units; ++q)
      for (int v : units_used_at(ctx_.layout, q)) {
        if (persistent(v) || gathered_[v] || (q >= units && gather_.from_secondary(true))) continue;  // hpZ's backward: no read
        if (!home_.read_ahead(v)) return;
      }
  }

  // Whether the next use of unit u in this micro-batch (after position_) is in the backward pass.
  bool next_use_is_backward(int u) const {
    const int units = ctx_.layout.num_units();
    for (int q = position_ + 1; q < 2 * units; ++q)
      for (int v : units_used_at(ctx_.layout, q))
        if (v == u) return q >= units;
    return false;
  }

  void free_gathered(int u) {
    gathered_[u].reset();
    live_ -= padded(u);
  }

  StageContext ctx_;
  Stage3Options o_;
  ParamHome home_;      // this rank's parameter slices, in param_shard_tier (the NVMe tier: a swap file)
  TransientGradients grads_;
  ParameterGather gather_;  // the gathers themselves (plain, ZeRO++ qwZ, hpZ); outlives the gathers in flight
  std::vector<std::optional<Gathered>> gathered_;  // (num_units) whole units now alive or on their way
  std::vector<DeviceBuffer> persistent_;           // (num_units) (unit padded) compute dtype, device: persistent units, whole
  std::vector<Handle> persistent_gathers_;         // (num_units) their all-gathers after the step
  std::int64_t live_ = 0;                          // elements of gathered_ alive
  int position_ = -1;                              // where the schedule is in its order of use; -1 outside a micro-batch
};

}  // namespace

std::unique_ptr<Stage> make_stage3(const StageContext& ctx) { return std::make_unique<Stage3>(ctx); }

}  // namespace zero
