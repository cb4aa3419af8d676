// Internal to the engine: the stage policies. One interface, one implementation per stage
// (stage0.cpp .. stage3.cpp), chosen by number in make_stage(). A stage decides what stays whole
// and what stays sharded, and when the collectives run; where the optimizer's state lives is the
// placement's (optimizer.h), never the stage's. The step's order is the schedule's (schedule.cpp).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "common/trace.h"
#include "device/device.h"
#include "engine/collectives.h"
#include "engine/engine.h"
#include "engine/optimizer.h"
#include "partition/layout.h"

namespace zero {

struct StageContext {
  const FlatLayout& layout;
  Collectives& comm;
  Device& device;
  std::uint64_t seed;
  Tier param_shard_tier = Tier::kDevice;  // stage 3: where the parameter shard lives (host, nvme: offload_param)
  Stage3Options stage3 = {};              // stage 3: prefetch, live cap, persistence, reuse
  Dtype dtype = Dtype::kF32;              // of the parameters and gradients the stage holds (Precision::compute)
  NvmeParamOptions param_nvme = {};       // stage 3, param_shard_tier nvme: the swap folder and buffers
  bool pin_memory = false;                // page-lock the stage's host buffers (offload pin_memory)
};

// The order in which one micro-batch uses its units (schedule.cpp): position u < U is unit u's
// forward, position U + i is the backward of unit U-1-i; each reads its unit and its borrows.
int use_position(const FlatLayout& layout, int unit, bool backward);
std::vector<int> units_used_at(const FlatLayout& layout, int position);

class Stage {
 public:
  virtual ~Stage() = default;

  // ---- parameters ----
  // Makes unit u whole and readable through params(u) until the matching release(u).
  virtual void fetch(int u) = 0;
  virtual void release(int u) = 0;
  // The schedule is at `position` of its order of use (use_position), the units it reads
  // fetched: a stage may start making what comes next whole (stage 3 gathers ahead).
  virtual void in_use(int /*position*/) {}
  // The micro-batch's uses are over (after its backward, or after a forward alone: an
  // evaluation): nothing may stay whole for a reuse that will not come.
  virtual void end_of_uses() {}
  virtual DeviceSpan params(int u) = 0;  // (unit padded) compute dtype, device: between fetch and release

  // ---- gradients ----
  // A micro-batch begins. `first`: the first since the last optimizer step; `boundary`: the last
  // before the next one (gradient accumulation ends there).
  virtual void begin_micro_batch(bool first, bool boundary) = 0;
  // The whole gradient accumulator of unit u (backward adds into it).
  virtual DeviceSpan grads(int u) = 0;
  // Unit u's gradient for this micro-batch is complete: reduce it and hand the optimizer the
  // reduced part. Stages 0 and 1 accumulate locally and reduce at the boundary; stages 2 and 3
  // reduce-scatter every micro-batch (what they keep is only the shard).
  virtual void reduce_gradients(int u) = 0;
  // Every reduction this stage issued has completed and its buffers are free.
  virtual void finish_reduction() = 0;

  // ---- the optimizer ----
  // What this rank updates of each unit, one part per unit in unit order; and whether the stage
  // sheds its gradients (reduces into ShardOptimizer::reduce_target every micro-batch).
  virtual std::vector<OptimizerPart> optimizer_parts() = 0;
  virtual bool sheds_gradients() const = 0;
  void set_optimizer(ShardOptimizer* optimizer) { optimizer_ = optimizer; }
  // After the optimizer: make the updated parameters whole where the stage keeps them whole.
  // The all-gathers run while the next forward starts; fetch(u) waits for unit u's.
  virtual void gather_parameters() {}
  // Every all-gather gather_parameters() issued has completed: peers no longer read this rank's
  // slices, so they may be written outside a step (the delayed update's last result, a loaded
  // checkpoint). Also what finish_reduction() waits for before the optimizer writes the slices.
  virtual void wait_parameter_gathers() {}
  // offload_param "nvme": where the optimizer writes the updated parameters of its host-tier
  // parts (the stage's swap file), and the bytes moved to and from that file so far.
  virtual ParamSink* param_sink() { return nullptr; }
  virtual ShardOptimizer::DiskTraffic disk_traffic() const { return {}; }

 protected:
  ShardOptimizer* optimizer_ = nullptr;
};

std::unique_ptr<Stage> make_stage(int stage, const StageContext& ctx);

// Copies every parameter, whole and unpadded, in layout order into out (layout.numel() f32 on
// the host; 16-bit parameters widened): each unit fetched, copied, released. A collective where fetching gathers (stage 3).
void copy_full_parameters(Stage& stage, const FlatLayout& layout, Device& device, std::span<float> out);

// ---- shared by the stage implementations ----

// The optimizer's parts of a sharded stage (1-3): this rank's slice of every unit, its parameters
// where `params(u)` says.
std::vector<OptimizerPart> slice_parts(const FlatLayout& layout, int rank, const std::function<DeviceSpan(int)>& params);

// The parameters of stages 0-2: every unit whole on the device (counter-based init), this rank's
// slice of each updated by the optimizer (stages 1-2) and all-gathered back into the whole.
class WholeParameters {
 public:
  explicit WholeParameters(const StageContext& ctx);
  ~WholeParameters();
  WholeParameters(const WholeParameters&) = delete;
  WholeParameters& operator=(const WholeParameters&) = delete;
  DeviceSpan unit(int u) const;   // (unit padded) compute dtype: unit u, whole
  DeviceSpan slice(int u) const;  // this rank's slice of unit u, inside the whole
  void start_gather();            // every unit's slice all-gathered into the whole, asynchronously
  void wait(int u);               // unit u's gather has completed
  void wait_all();

 private:
  StageContext ctx_;
  DeviceBuffer params_;          // (padded_numel) compute dtype, device tier
  std::vector<Handle> gathers_;  // (num_units) in flight after start_gather
};

// Whole unit gradients that exist only while backward produces them (stages 2 and 3): allocated
// at first use, reduce-scattered into the optimizer's target when complete, then freed. One
// reduction is in flight while backward goes on; the next waits for it, so at most two whole
// unit gradients are alive (plus a borrowed unit's, which stays whole until its own backward).
class TransientGradients {
 public:
  explicit TransientGradients(const StageContext& ctx) : ctx_(ctx), whole_(ctx.layout.num_units()) {}
  ~TransientGradients();
  TransientGradients(const TransientGradients&) = delete;
  TransientGradients& operator=(const TransientGradients&) = delete;
  DeviceSpan get(int u);
  void reduce(int u, ShardOptimizer& optimizer);
  void finish();  // the last reduction has completed; every unit gradient was reduced

 private:
  void wait_pending();

  StageContext ctx_;
  std::vector<DeviceBuffer> whole_;  // (num_units) whole unit gradients, alive between get and reduce
  int pending_unit_ = -1;
  Handle pending_;
};

}  // namespace zero
