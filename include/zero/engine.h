// The engine: ZeRO-sharded data-parallel training of a Module over a Communicator.
//
//   Engine engine(config, model, comm, ledger);   // checks, shards and initialises
//   model.set_batch(...);                           // this rank's micro-batch (model-specific)
//   float loss = engine.train_step();               // forward, backward + reduce, Adam, gather
//
// With gradient accumulation, each optimizer step is several micro-batches:
//   for (m = 0; m < k; ++m) { model.set_batch(...); engine.forward_backward(m == k - 1); }
//   engine.step();
//
// Every stage gives the same parameters, bit for bit, for a given world size and seed (hybrid
// sharding in groups of 1 < G < N aside: it adds each group's gradients first; docs/hybrid.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zero/backend_facts.h"
#include "zero/communicator.h"
#include "zero/dtype.h"
#include "zero/module.h"
#include "zero/settings.h"
#include "zero/ledger.h"
#include "zero/adamw.h"
#include "zero/lamb.h"
#include "zero/loss_scaler.h"
#include "zero/layout.h"

namespace zero {

class Collectives;
class QuantizedReduceScatter;
class Device;
class DeviceBuffer;
class DeviceSpan;
class LossScaler;
class ShardOptimizer;
class Stage;
class Tracer;

// The engine's settings (settings.h) and how this engine is wired: the seed, the device
// backend holding its memory, a tracer. What a config file decides is all in EngineSettings, so
// that the planner's dry run runs exactly the settings the trainer does.
struct EngineConfig : EngineSettings {
  std::uint64_t seed = 1234;  // initialisation (counter-based: the same whatever the world size)
  Tracer* tracer = nullptr;  // records compute, communication, copies and the CPU optimizer, if set
  // The device backend holding engine memory: a name in backends/registry.h (the tests' and the
  // planner's devices included).
  std::string device = default_device();
};

// The optimizer state a checkpoint holds per element: the f32 master parameters (the parameters
// themselves while they are f32) and Adam's moments. Masters and moments stay f32 whatever the
// compute dtype. With the delayed update in flight (the last step's Adam has updated the masters
// but not yet the parameters the next forward computes with) a fourth: the parameters in use,
// read and written as f32 (16-bit values widen exactly). A ZenFlow run saves the parameters in
// use always (the device's columns are newer there than in the masters) and four more, laid out
// like the others: the gradients summed since the CPU's last update, the device's columns (1 where
// an element is the device's, else 0), and the device's Adam moments of them (0 elsewhere).
enum class StateTensor { kMaster, kExpAvg, kExpAvgSq, kParamsInUse, kZenflowGradSum, kZenflowSelected, kZenflowExpAvg, kZenflowExpAvgSq };
inline constexpr int kNumStateTensors = 3;  // always saved; kParamsInUse only with an update in flight
inline constexpr int kNumZenflowTensors = 8;  // a ZenFlow checkpoint's: every StateTensor, in this order

// ZenFlow's counters besides the step (its device step follows from it): the steps whose gradients
// are summed for the CPU's next update, and whether a CPU update (overlap_step) has reached the
// masters but not yet the parameters.
struct ZenflowCounters {
  int summed = 0;
  bool in_flight = false;
};

// What a checkpoint restores besides the per-element state.
struct EngineCounters {
  std::int64_t steps_done = 0;
  std::int64_t skipped_steps = 0;                // fp16: steps skipped on overflow (Adam counts the others)
  std::optional<LossScalerState> loss_scaler;    // fp16
  bool update_in_flight = false;                 // the delayed update: kParamsInUse differs from the masters
  std::optional<ZenflowCounters> zenflow;        // a ZenFlow run's (its checkpoint holds kNumZenflowTensors)
};

struct StepReport {
  float lr = 0.0f;
  double grad_norm = -1.0;  // global norm before clipping; -1 when not computed
  bool clipped = false;
  bool skipped = false;      // fp16: a gradient overflowed on some rank; no rank updated
  float loss_scale = 1.0f;   // the scale this step's loss was multiplied by (1 unless fp16)
};

class Engine {
 public:
  // Validates the config, checks (with one small collective) that every rank describes the same
  // model, then allocates and initialises this rank's state. Throws ConfigError on bad input.
  Engine(const EngineConfig& config, Module& module, Communicator& comm, Ledger& ledger);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // One optimizer step on the micro-batch the module holds. Returns this rank's loss.
  float train_step();

  // Forward and backward of the micro-batch the module holds; `last` marks the last micro-batch
  // before step(). Returns this rank's loss on it.
  float forward_backward(bool last);
  // The optimizer step over the gradients accumulated since the last one: average, norm and
  // clipping, Adam on this rank's shard, then the gathers the stage needs.
  StepReport step();
  // The learning rate of the next step: set it before the step's first forward_backward (with
  // offload the optimizer may start during the last micro-batch's backward).
  void set_learning_rate(float lr);
  // Completes optimizer work still in flight (the delayed update). A collective; full_parameters
  // calls it.
  void synchronize();
  // Forward only (validation, sampling): this rank's loss on the micro-batch the module holds.
  float evaluate();

  // Every parameter, whole and unpadded, in layout order. A collective in stage 3.
  std::vector<float> full_parameters();

  // ---- checkpoints (checkpoint/): this rank's optimizer state, read and written unit by unit ----
  // The elements of unit u's flat (padded) buffer whose state this rank holds, as [first, first +
  // count): its slice in stages 1-3, the whole unit in stage 0.
  struct HeldRange {
    std::size_t first = 0, count = 0;
  };
  HeldRange held_state(int u) const;
  // Elements [first, first + out.size()) of unit u's `tensor`, which must lie in held_state(u),
  // copied to or from host memory through the device seam (offloaded state never visits the
  // device tier). Call between steps, after counters().
  void read_state(StateTensor tensor, int u, std::size_t first, std::span<float> out);
  void write_state(StateTensor tensor, int u, std::size_t first, std::span<const float> in);
  // After write_state of every held element: the parameters the stage computes with are made
  // from the masters, rounded to the compute dtype as the step rounds them (or, with an update
  // in flight and always with ZenFlow's counters, are the kParamsInUse written), and gathered where the stage keeps them whole; the
  // next step is optimizer step `steps_done` + 1 (the schedule), Adam's step count leaves out the
  // skipped steps, and fp16's loss scaler continues from its saved state.
  void state_written(const EngineCounters& counters);
  // The counters a checkpoint of this state records. Waits for the delayed update's Adam to
  // finish on the masters (without applying it to the parameters in use: that stays the next
  // step's, as in a run that saves nothing).
  EngineCounters counters();
  // Whether state_written may be told of an update in flight: the delayed update is on and the
  // step after `steps_done` is a delayed one. Otherwise a checkpoint's pending update is applied.
  bool holds_update_in_flight(std::int64_t steps_done) const;

  // Whether every rank's f32 master parameters are finite (a collective: one byte per rank). A
  // step whose update overflowed leaves inf or nan there before any loss shows it; checked
  // before a checkpoint is written. Waits for the delayed update as counters() does.
  bool parameters_finite();

  const FlatLayout& layout() const { return layout_; }
  const EngineConfig& config() const { return config_; }
  std::int64_t steps_done() const { return step_; }
  // fp16: optimizer steps skipped because a gradient overflowed, and the scale of the next step.
  std::int64_t skipped_steps() const { return skipped_; }
  float loss_scale() const;
  // Bytes moved by the last optimizer step (all its micro-batches), by kind of collective; with
  // hybrid sharding, on the shard group's and the replicas' communicators too.
  const Traffic& last_step_traffic() const { return last_traffic_; }
  // Bytes the last optimizer step copied between the host and device tiers (offload), issued by
  // the step; the delayed update's copy of step t's result is issued at step t+1.
  std::uint64_t last_step_to_host() const { return last_to_host_; }
  std::uint64_t last_step_to_device() const { return last_to_device_; }
  // Bytes the last optimizer step read from and wrote to the NVMe tier (offload_optimizer.device
  // "nvme": every step reads and writes the masters and moments once); 0 on other placements.
  std::uint64_t last_step_disk_read() const { return last_disk_read_; }
  std::uint64_t last_step_disk_written() const { return last_disk_written_; }
  // Of last_step_disk_read, the parameter swap file's (offload_param "nvme"): read under forward
  // and backward ahead of the gathers, where the optimizer's file is read at the step.
  std::uint64_t last_step_param_disk_read() const { return last_param_disk_read_; }

 private:
  void forward();
  void backward();
  double global_grad_norm();
  void lamb_step();
  bool any_rank_overflowed();
  void run_unit(int u, bool backward);
  void make_shard_groups();
  void make_hpz_group();
  Traffic traffic_now() const;  // of every communicator the engine issues on
  void set_context(const std::string& context);
  void run_kernel(int u, bool backward, const std::vector<DeviceSpan>& params, const std::vector<DeviceSpan>& grads,
                  const std::vector<DeviceSpan>& params_bf16);
  DeviceSpan state_span(StateTensor tensor, int u, std::size_t first, std::size_t count);

  EngineConfig config_;
  Module& module_;
  Communicator& comm_;
  FlatLayout layout_;
  // Hybrid sharding (mics_shard_size): this rank's shard group of consecutive ranks and its
  // replicas (the ranks of the same index in the other groups); null without it. Declared
  // before the collectives, whose thread issues on them, so that they outlive it.
  std::unique_ptr<Communicator> group_comm_;
  std::unique_ptr<Communicator> replica_comm_;
  Communicator* shards_ = nullptr;  // the ranks that shard the state: the group, or comm_
  std::unique_ptr<Device> device_;
  // qgZ (zero_quantized_gradients, on more than one node): the gradient reduce-scatter's pair
  // communicators, thread and scratch (from device_, which it must not outlive); null without it.
  std::unique_ptr<QuantizedReduceScatter> quantized_reduce_;
  std::unique_ptr<Collectives> collectives_;
  // ZeRO++ hpZ (zero_hpz_partition_size): this rank's group of H ranks inside its node, over
  // which stage 3's backward gathers the secondary partition; null without it.
  std::unique_ptr<Communicator> hpz_comm_;
  std::unique_ptr<Collectives> hpz_collectives_;
  std::unique_ptr<Stage> stage_;
  std::unique_ptr<ShardOptimizer> optimizer_;
  std::unique_ptr<LossScaler> scaler_;  // fp16 only
  std::unique_ptr<DeviceBuffer> state_staging_;  // (largest held part) f32, host tier: checkpoint reads and writes
  std::int64_t step_ = 0;
  std::int64_t applied_ = 0;  // steps whose update was applied (Adam's step count)
  std::int64_t skipped_ = 0;
  int micro_batches_ = 0;  // since the last optimizer step
  bool last_seen_ = false;  // forward_backward(true) ran since the last optimizer step
  Traffic step_start_traffic_;
  Traffic last_traffic_;
  Traffic step_start_own_traffic_;  // the optimizer's own communicators' (1-bit Adam)
  std::uint64_t step_start_to_host_ = 0, step_start_to_device_ = 0, last_to_host_ = 0, last_to_device_ = 0;
  std::uint64_t step_start_disk_read_ = 0, step_start_disk_written_ = 0, last_disk_read_ = 0, last_disk_written_ = 0;
  std::uint64_t step_start_param_disk_read_ = 0, last_param_disk_read_ = 0;
};

}  // namespace zero
