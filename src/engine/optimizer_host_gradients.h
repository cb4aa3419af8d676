// Internal to the engine: what the optimizers that run Adam on the CPU share, the gradient shard
// in the host tier. Host offload (optimizer_host.cpp) keeps the rest of the state in host memory
// too; the NVMe tier (optimizer_nvme.cpp) keeps it in a swap file.
//
// As each unit's reduced gradient completes, the copy stream brings it to the host gradient
// state (adding to what earlier micro-batches left, averaging at the last one), in micro-batch
// order, so every element sees the same operations as on the device.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "engine/optimizer.h"

namespace zero {

class HostGradientOptimizer : public ShardOptimizer {
 public:
  // `buffers`: 2 with the delayed update (the step being applied reads one, the next step
  // fills the other), else 1.
  HostGradientOptimizer(const OptimizerContext& ctx, int buffers);
  ~HostGradientOptimizer() override;

  void begin_micro_batch(bool first, bool boundary) override;
  DeviceSpan reduce_target(int u) override;
  void reduced(int u, const DeviceSpan& region, const Handle& done) override;
  void finish() override;
  double sum_squares() override;
  void scale(float c) override;
  bool nonfinite() override;

 protected:
  // Unit u's gradient for the step has landed (the step's last micro-batch): `landed` completes
  // when it is in grad(current_, part), averaged.
  virtual void gradient_landed(const OptimizerPart& part, const Handle& landed) = 0;

  bool mixed() const { return ctx_.dtype != Dtype::kF32; }
  static bool on_device(const OptimizerPart& p) { return p.params.tier() == Tier::kDevice; }
  std::size_t largest_part() const;
  DeviceSpan grad(int buffer, const OptimizerPart& p) const { return grads_[buffer].sub(p.offset, p.params.size()); }
  // A host-tier buffer, page-locked if pin_memory asks (a line on stderr, once, where refused).
  DeviceBuffer host_buffer(Category c, std::size_t n, const std::string& what, Dtype dtype);
  static void quiet_sync(Stream& s);
  // The parameters take the f32 masters on stream `s`: copied, or in mixed precision rounded.
  void params_from_masters(Stream& s, const DeviceSpan& params, const DeviceSpan& masters) {
    if (mixed()) dev_.convert(s, params, masters);
    else dev_.copy(s, params, masters);
  }

  OptimizerContext ctx_;
  Device& dev_;
  int grad_buffers_;        // 2 with the delayed update
  DeviceBuffer grads_[2];   // (state_numel) compute dtype, host tier: reduced gradients (two with the DPU)
  int current_ = 0;         // the gradient buffer this step fills
  bool boundary_ = true;

 private:
  struct Pending {
    DeviceBuffer slice;  // (part) compute dtype, device tier, comm: the reduced slice on its way to the host
    Handle landed;
  };
  void retire();

  DeviceBuffer staging_;    // (largest part) compute dtype, host tier, comm: a later micro-batch's slice, before it is added
  std::deque<Pending> pending_;
  std::vector<bool> landed_;  // (num_units) reduced at least once this step
  int micro_batches_ = 0;
  bool pin_warned_ = false;
};

}  // namespace zero
