// Internal to the engine: ZenFlow's device side (zenflow.h has its rules), shared by its two CPU
// sides, the CPU's state in host memory (optimizer_zenflow.cpp) and on the NVMe tier
// (optimizer_zenflow_nvme.cpp). The important columns of every 2-D weight in this rank's part,
// and its 1-D parameters (biases, norms: DeepSpeed updates them whole with the selected columns),
// are updated every step by Adam on the device, with their moments in the device tier.
//
// A column is one of a weight's (out, in) matrix's `in` columns as DeepSpeed's are; a rank ranks
// the columns over the whole rows of the weight its slice holds (zenflow.h: whole_rows; a row the
// slice cuts is the CPU's alone), as DeepSpeed ranks the columns of each rank's partition: the
// ranks choose apart.
//
// Mixed precision (bf16, fp16): as DeepSpeed's ZenFlowSelectiveAdamW updates the 16-bit
// parameters of the selected columns in place (no f32 master of them on the device), each
// device step widens their 16-bit values, runs Adam in f32 with this step's 16-bit gradient, and
// rounds the result back into the parameters. The moments are f32 here (DeepSpeed's take the
// parameters' dtype: zeros_like).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/optimizer.h"

namespace zero {

class ZenflowColumns {
 public:
  // ctx outlives this (the optimizer's own copy).
  explicit ZenflowColumns(const OptimizerContext& ctx);

  // The device's side of the next step (`s`: the CPU's scalars; `grads`: this step's gradient,
  // laid out like the parts, host tier): false in the warm-up (the step is the CPU's alone); else
  // the selection where one is due (zenflow.h), `between` (host ZenFlow queues its accumulation
  // there, beside the device's work), and the device's Adam.
  bool step(const AdamStep& s, const DeviceBuffer& grads, const std::function<void()>& between);
  std::int64_t steps() const { return steps_; }  // taken so far, warm-up included: the next is step steps() (zenflow.h's t)
  // The elements of part `part` in [begin, begin + master.size()) that the device updates: the
  // masters there (host tier) take the parameters' values, on stream `s`
  // (DeepSpeed's sync_fp32_param_from_gpu). Copying the masters to the parameters after it
  // is DeepSpeed's temp_copy_param: the CPU's result reaches every element but the device's.
  void take(Stream& s, int part, std::size_t begin, const DeviceSpan& master);

  // Checkpoints (zenflow_columns_state.cpp): part `part`'s kZenflowSelected (host tier) or
  // kZenflowExpAvg, kZenflowExpAvgSq (device tier), laid out like the part, unpacked from the
  // device's; state_changed packs what was written into them (the selection first, as a
  // checkpoint orders them). Spans valid until the next call.
  DeviceSpan state(int part, StateTensor tensor);
  void state_changed(int part, StateTensor tensor);
  // A checkpoint of step `steps` was loaded; `fresh`: one without ZenFlow's state (the device's
  // columns are chosen at the next step past the warm-up, their moments from zero).
  void restore(std::int64_t steps, bool fresh);
  // The buffers above freed (at the next step: the device's memory is the step's).
  void release_checkpoint_buffers();

 private:
  // One parameter's run in a part, and where its device-side state lies.
  struct ColumnRun {
    std::size_t offset = 0;         // in the part: its parameters, gradients and host state
    std::size_t numel = 0;          // a matrix: its whole rows in the part
    std::size_t first = 0;          // the parameter's element at `offset`
    std::size_t cols = 0;           // a 2-D weight's columns; 0: not a matrix, the whole run on the device
    std::size_t device_offset = 0;  // in the device buffers
    std::size_t packed = 0;         // elements on the device: rows * k for a matrix (k columns selected), numel if not
    std::vector<std::uint32_t> selected;
    Segment segment;                // the parameter's facts (decay), for Adam over the packed elements
  };
  std::vector<ColumnRun> runs_of(const OptimizerPart& p, std::size_t& device_numel) const;
  // Each matrix's top columns by the L1 norm of this step's gradient; the device's moments restart.
  void select(const DeviceBuffer& grads);
  // Adam on the device over the selected columns and the 1-D parameters, with this step's
  // gradient; `s`: the device's step scalars (scalars()).
  void device_step(const AdamStep& s, const DeviceBuffer& grads);
  // Step `t`'s scalars from the step's own (its learning rate, betas, decay).
  AdamStep scalars(const AdamStep& s, std::int64_t t) const;
  bool mixed() const { return ctx_.dtype != Dtype::kF32; }

  const OptimizerContext& ctx_;
  Device& dev_;
  ZenflowOptions z_;
  std::vector<std::vector<ColumnRun>> runs_;  // per part
  DeviceBuffer dm_, dv_;       // (device_numel) f32, device tier: the device's Adam moments of the selected columns and 1-D parameters
  DeviceBuffer dp_;            // (device_numel) f32, device tier: their parameters, packed (mixed precision: widened for Adam)
  DeviceBuffer dg_;            // (device_numel) compute dtype, device tier: their gradient, packed
  DeviceBuffer dp16_;          // (device_numel) compute dtype, device tier, mixed precision only: their 16-bit parameters, packed
  std::int64_t steps_ = 0;
  bool reselect_ = false;      // a fresh ZenFlow start past the warm-up: select at the next step
  DeviceBuffer unpacked_;      // (largest part) f32, device tier: a checkpoint's moments, unpacked
  DeviceBuffer mask_;          // (largest part) f32, host tier: a checkpoint's kZenflowSelected
};

}  // namespace zero
