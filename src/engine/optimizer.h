// Internal to the engine: the optimizer's placement. The stage decides what this rank updates
// (its parts); the placement decides where Adam's state and the reduced gradients live and where
// Adam runs: on the device (optimizer_device.cpp) or, with ZeRO-Offload, on the host
// (optimizer_host.cpp, with the delayed update; optimizer_zenflow.cpp, ZenFlow's split), or with
// its state on the NVMe tier (optimizer_nvme.cpp; optimizer_zenflow_nvme.cpp, ZenFlow's). Neither knows which stage it serves: a stage is
// described to it only by its parts and by whether it sheds its gradients.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "comm/communicator.h"
#include "device/device.h"
#include "engine/engine.h"
#include "optim/adamw.h"
#include "optim/lamb.h"
#include "partition/layout.h"

namespace zero {

// What this rank's optimizer updates of one unit.
struct OptimizerPart {
  int unit = -1;
  DeviceSpan params;              // the parameters it updates (compute dtype): device tier, or host
                                  // tier when the host copy is the only one (offload_param). 16-bit
                                  // parameters are written from an f32 master the optimizer keeps.
  std::vector<Segment> segments;  // of params: which elements are which parameter, and padding
  std::size_t offset = 0;         // of this part in the optimizer's state (m, v, gradients)
  std::size_t norm_begin = 0;     // this rank's slice within the part, for the gradient norm:
  std::size_t norm_numel = 0;     // every stage sums the same elements in the same order
};

// Part p's slice of an optimizer state laid out like the parts (at p.offset), such as Adam's m and v.
inline DeviceSpan slot(const DeviceBuffer& state, const OptimizerPart& p) { return state.sub(p.offset, p.params.size()); }

// An Adam optimizer's answer to ShardOptimizer::state: part p's master, m or v, or its parameters.
inline DeviceSpan adam_state(const OptimizerPart& p, StateTensor tensor, const DeviceSpan& master, const DeviceBuffer& m,
                             const DeviceBuffer& v) {
  switch (tensor) {
    case StateTensor::kMaster: return master;
    case StateTensor::kExpAvg: return slot(m, p);
    case StateTensor::kExpAvgSq: return slot(v, p);
    default: return p.params;
  }
}

// Where the updated parameters of parts whose home is the disk go (offload_param "nvme"). Such a
// part's params span is a host window shared by all of them: the optimizer writes a range of one
// part into it, then calls written(), which puts it in the swap file before returning.
class ParamSink {
 public:
  virtual ~ParamSink() = default;
  virtual void written(int unit, std::size_t begin, const DeviceSpan& range) = 0;
};

struct OptimizerContext {
  const FlatLayout& layout;
  Device& device;
  std::vector<OptimizerPart> parts;
  std::size_t state_numel = 0;   // elements of m, v and the gradient state: the parts laid end to end
  bool sheds_gradients = false;  // the stage reduces every micro-batch into reduce_target()'s spans
  // Adam must wait for the step (clipping scales the gradients by the global norm; fp16 loss
  // scaling may skip the step): the host optimizer does not start Adam during backward.
  bool adam_waits_for_step = false;
  Dtype dtype = Dtype::kF32;     // of the parameters and gradients (Precision::compute)
  std::uint64_t seed = 0;
  OffloadOptions offload{};
  int local_ranks = 1;           // ranks sharing this node's host memory
  int rank = 0;                  // this rank (the NVMe tier's swap folder is named after it)
  double predivide = 1.0;        // the reductions' inputs were divided by this (EngineConfig::gradient_predivide_factor)
  OptimizerKind kind = OptimizerKind::kAdam;  // kOneBitAdam, kZeroOneAdam: make_onebit_optimizer (stage 0)
  OneBitAdamConfig onebit{};
  ZeroOneAdamConfig zero_one{};
  Communicator* comm = nullptr;  // the world: 1-bit Adam's compressed all-reduce
  ParamSink* param_sink = nullptr;  // offload_param "nvme": where host-tier parts' updates go (else none)
  bool bias_correction = true;   // AdamConfig::bias_correction: ZenFlow derives its two Adam step counts' scalars
  // ZenFlow clips the CPU's summed gradient itself (EngineConfig::gradient_clipping; 0: off), by
  // its norm over `norm_group`, the ranks that shard the state (the engine's gradient norm's).
  float gradient_clipping = 0.0f;
  Communicator* norm_group = nullptr;
};

class ShardOptimizer {
 public:
  virtual ~ShardOptimizer() = default;

  // A micro-batch begins; `boundary`: the last before the optimizer step.
  virtual void begin_micro_batch(bool first, bool boundary) = 0;
  // Where a stage that sheds its gradients reduce-scatters unit u's slice this micro-batch.
  virtual DeviceSpan reduce_target(int u) = 0;
  // Unit u's reduced gradient (this rank's part) is written to `region` by `done`: a span from
  // reduce_target, or the stage's own (stages that keep their gradients reduce in place).
  virtual void reduced(int u, const DeviceSpan& region, const Handle& done) = 0;
  // Every reduced gradient has landed, averaged over N * micro-batches (gradient_divisor).
  virtual void finish() = 0;

  // The gradient norm's partial sum over this rank's slices; clipping.
  virtual double sum_squares() = 0;
  virtual void scale(float c) = 0;
  // True if any reduced gradient of this rank's slices is inf or NaN (fp16 loss scaling).
  virtual bool nonfinite() = 0;
  // The loss scale of the coming step: reduced gradients are divided by it with the average.
  void set_loss_scale(float s) { loss_scale_ = s; }

  // The coming step's scalars, given before its last micro-batch (offload starts Adam on each
  // unit as its gradient lands).
  virtual void prepare(const AdamStep& s) = 0;
  virtual void step(const AdamStep& s) = 0;
  // Lamb (optim/lamb.h) in its two phases, around the engine's reduction of the sums across
  // ranks. Phase 1: m and v of every part updated, and each parameter's sums over this rank's norm
  // slices added into sums[lamb_param_index(...)] (one entry per parameter of the layout).
  // Phase 2: every part's parameters moved with their parameter's coefficient coef[index].
  virtual void lamb_moments(const LambStep& s, std::vector<LambNorms>& sums) = 0;
  virtual void lamb_update(const LambStep& s, const std::vector<float>& coef) = 0;
  // Bytes read from and written to the disk tier so far (the NVMe tier's swap files).
  struct DiskTraffic {
    std::uint64_t read = 0, written = 0;
  };
  virtual DiskTraffic disk_traffic() const { return {}; }
  // Completes work still in flight (the delayed update). True if it changed the parameters the
  // stage holds (they must be gathered again).
  virtual bool synchronize() { return false; }
  // True when this step's gradients stay each rank's own (1-bit Adam after its warm-up, which
  // averages the momentum instead): the stage does not reduce them, and the gradient norm is each
  // rank's own, as DeepSpeed clips them. Fixed at the step's first micro-batch.
  virtual bool local_gradients() const { return false; }
  // What the optimizer's own communicators have sent (1-bit Adam's pairs), for the step's traffic.
  virtual Traffic own_traffic() const { return {}; }
  // A checkpoint was loaded: this many optimizer steps had been applied (1-bit Adam's warm-up counts them).
  virtual void set_steps_applied(std::int64_t) {}

  // Checkpoints: unit u's part of the f32 masters or of Adam's moments, wherever they live, or
  // (kParamsInUse) the part's parameters in the compute dtype.
  // A span the optimizer may have staged (the NVMe tier: a host copy of the part, read from disk).
  virtual DeviceSpan state(int u, StateTensor tensor) = 0;
  // The span state(u, tensor) gave was written: where it was a staged copy, it goes back.
  virtual void state_changed(int /*u*/, StateTensor /*tensor*/) {}
  // Waits for optimizer work in flight on the state (the delayed update's Adam) without applying
  // it to the parameters; true when its result has yet to reach them (the parameters in use are
  // the step before's).
  virtual bool update_in_flight() { return false; }
  // The state was overwritten (a checkpoint was loaded): the parameters the stage holds are made
  // from the masters, rounded to the compute dtype (unless `in_flight`: then they were written
  // as kParamsInUse and the masters reach them at the next step); `steps_done` optimizer steps
  // have been taken.
  virtual void state_written(std::int64_t steps_done, bool in_flight) = 0;
  // ZenFlow's counters for a checkpoint (none: not ZenFlow), after update_in_flight(); and, before
  // state_written, a checkpoint's (none: a checkpoint of another placement, a fresh ZenFlow start).
  virtual std::optional<ZenflowCounters> zenflow_counters() const { return std::nullopt; }
  virtual void restore_zenflow(const std::optional<ZenflowCounters>&) {}

 protected:
  // The one division of the reduced gradients at the step's last micro-batch: the average over
  // N ranks and `micro_batches`, with the loss scale. 1 means none.
  // What the summed gradients are divided by at the step's last micro-batch: N * micro-batches,
  // less the predivide the reductions' inputs already had, times the loss scale. 1: nothing to do.
  float gradient_divisor(int ranks, int micro_batches, double predivide) const {
    return static_cast<float>(static_cast<double>(ranks) * micro_batches / predivide) * loss_scale_;
  }
  float loss_scale_ = 1.0f;
};


// Lamb's per-parameter bookkeeping (optimizer_lamb.cpp): the parameters of the layout numbered
// in unit order; a part's per-segment sums added into the layout-wide ones; and a part's
// per-segment coefficients taken from the layout-wide ones.
std::size_t lamb_param_count(const FlatLayout& layout);
void lamb_add_part(const FlatLayout& layout, const OptimizerPart& part, const std::vector<LambNorms>& per_segment,
                   std::vector<LambNorms>& sums);
std::vector<float> lamb_part_coefficients(const FlatLayout& layout, const OptimizerPart& part, const std::vector<float>& coef);

// Where the f32 master parameters live in the ledger: in mixed precision they are optimizer
// state (the paper's K = 12 counts them); in f32 offload's host copy is a parameter copy.
Category master_category(Dtype compute);

// Throws OutOfMemoryError when this node's host memory cannot hold the offloaded state of
// `state_numel` elements per rank: called before anything is allocated.
void check_host_room(Device& device, std::size_t state_numel, const OffloadOptions& offload, int local_ranks, Dtype compute);

// The placement: offload.optimizer picks the host, and offload.optimizer_nvme the disk.
std::unique_ptr<ShardOptimizer> make_optimizer(const OptimizerContext& ctx);
std::unique_ptr<ShardOptimizer> make_nvme_optimizer(const OptimizerContext& ctx);
std::unique_ptr<ShardOptimizer> make_device_optimizer(const OptimizerContext& ctx);
std::unique_ptr<ShardOptimizer> make_host_optimizer(const OptimizerContext& ctx);
std::unique_ptr<ShardOptimizer> make_onebit_optimizer(const OptimizerContext& ctx);
std::unique_ptr<ShardOptimizer> make_zenflow_optimizer(const OptimizerContext& ctx);
std::unique_ptr<ShardOptimizer> make_zenflow_nvme_optimizer(const OptimizerContext& ctx);

}  // namespace zero
