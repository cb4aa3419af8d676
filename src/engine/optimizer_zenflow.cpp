// ZenFlow (DeepSpeed's zero_optimization.zenflow; its rules in zenflow.h) with the CPU's state in
// host memory: ZeRO-Offload split in two. The device updates the selected columns every step
// (zenflow_columns.h); every element's gradient is accumulated in host memory, and the CPU's Adam,
// with the host moments and f32 masters of plain offload, applies their mean every
// update_interval steps to the columns not selected. optimizer_zenflow_nvme.cpp keeps the same
// CPU state on the NVMe tier.
//
// Applying the CPU's result is DeepSpeed's temp_copy_param: the masters of the columns the device
// updates take the device's values (ZenflowColumns::take; DeepSpeed's sync_fp32_param_from_gpu,
// which it makes at a selection, made here at every CPU update, so that a column that leaves the
// selection goes on from where the device left it), and the parameters take the masters.
//
// overlap_step: the CPU's Adam of an interval is queued on the host stream and the step returns;
// the next interval's steps run meanwhile (their gradients accumulate into a second host buffer),
// and at the next update its result is applied before the next one is queued: one interval late.
//
// Streams: the accumulation runs on the copy stream, the device's Adam on the compute stream,
// the CPU's Adam on the host stream (which waits for the accumulation), so that a queued CPU
// update never holds up the next steps.
#include "common/error.h"
#include "engine/optimizer_host_gradients.h"
#include "engine/zenflow.h"
#include "engine/zenflow_columns.h"

namespace zero {
namespace {

class ZenflowOptimizer final : public HostGradientOptimizer {
 public:
  explicit ZenflowOptimizer(const OptimizerContext& ctx) : HostGradientOptimizer(ctx, 1), z_(ctx.offload.zenflow), cols_(ctx_) {
    ZERO_CHECK(ctx.dtype == Dtype::kF32, "ZenFlow in ", dtype_label(ctx.dtype));
    const std::size_t n = ctx.state_numel;
    master_ = host_buffer(master_category(ctx.dtype), n, "fp32 master parameter shard", Dtype::kF32);
    m_ = host_buffer(Category::kOptimizerState, n, "Adam first moment shard", Dtype::kF32);
    v_ = host_buffer(Category::kOptimizerState, n, "Adam second moment shard", Dtype::kF32);
    grads_[0] = host_buffer(Category::kGradients, n, "gradient shard", ctx.dtype);
    for (int i = 0; i < (z_.overlap_step ? 2 : 1); ++i) acc_[i] = host_buffer(Category::kGradients, n, "ZenFlow's accumulated gradient shard", ctx.dtype);
    for (const OptimizerPart& p : ctx_.parts) dev_.init(dev_.compute(), ctx.layout.unit(p.unit), p.segments, ctx.seed, master(p));
  }

  ~ZenflowOptimizer() override {  // a queued CPU update may still read the buffers below
    quiet_sync(dev_.copies());
    quiet_sync(dev_.host());
  }

  void gradient_landed(const OptimizerPart&, const Handle&) override {}  // everything waits for the step
  void prepare(const AdamStep&) override {}

  void step(const AdamStep& s) override {
    const std::int64_t t = cols_.steps();
    if (!cols_.step(s, grads_[0], [&] { accumulate(); })) return warm_up_step(s);
    if (zenflow::is_update_step(z_, t)) cpu_update(s);
    dev_.copies().synchronize();  // the accumulation read this step's gradient, which the next step's replaces
  }

  void lamb_moments(const LambStep&, std::vector<LambNorms>&) override { ZERO_CHECK(false, "Lamb with ZenFlow"); }
  void lamb_update(const LambStep&, const std::vector<float>&) override { ZERO_CHECK(false, "Lamb with ZenFlow"); }

  DeviceSpan state(int u, StateTensor tensor) override {
    const OptimizerPart& p = ctx_.parts.at(u);
    // The sum being filled; the other (overlap_step) was the CPU's, which has finished with it.
    if (tensor == StateTensor::kZenflowGradSum) return slot(acc_[acc_now_], p);
    if (tensor > StateTensor::kZenflowGradSum) return cols_.state(u, tensor);
    return adam_state(p, tensor, master(p), m_, v_);
  }
  void state_changed(int u, StateTensor tensor) override {
    if (tensor > StateTensor::kZenflowGradSum) cols_.state_changed(u, tensor);
  }

  bool update_in_flight() override {
    if (in_flight_) dev_.host().synchronize();
    return false;
  }

  // A checkpoint (update_in_flight() has waited for the CPU): a result in flight is saved as it
  // stands, the masters holding it and the parameters in use not, and lands at the next update.
  std::optional<ZenflowCounters> zenflow_counters() const override { return ZenflowCounters{accumulated_, in_flight_}; }
  void restore_zenflow(const std::optional<ZenflowCounters>& c) override { restored_ = c; }

  void state_written(std::int64_t steps_done, bool params_written) override {
    ZERO_CHECK(!restored_ || !restored_->in_flight || z_.overlap_step, "a ZenFlow update in flight without overlap_step");
    wait_cpu();
    if (!params_written) {
      for (const OptimizerPart& p : ctx_.parts) dev_.copy(dev_.compute(), p.params, master(p));
      dev_.compute().synchronize();
    }
    accumulated_ = restored_ ? restored_->summed : 0;
    in_flight_ = restored_ && restored_->in_flight;
    cols_.restore(steps_done, !restored_);
  }

  // The CPU update in flight (overlap_step) is applied now rather than at the next update.
  bool synchronize() override {
    if (!in_flight_) return false;
    wait_cpu();
    merge(true);
    return true;
  }

 private:
  DeviceSpan master(const OptimizerPart& p) const { return master_.sub(p.offset, p.params.size()); }

  // Plain offload: the CPU's Adam over every element, the parameters copied back.
  void warm_up_step(const AdamStep& s) {
    Stream& host = dev_.host();
    for (const OptimizerPart& p : ctx_.parts) {
      dev_.adam(host, s, p.segments, master(p), grad(0, p), slot(m_, p), slot(v_, p), {});
      dev_.copy(host, p.params, master(p));
    }
    host.synchronize();
  }

  void accumulate() {
    Stream& copies = dev_.copies();
    if (accumulated_ == 0) dev_.copy(copies, acc_[acc_now_].span(), grads_[0].span());
    else dev_.add(copies, acc_[acc_now_].span(), grads_[0].span());
    ++accumulated_;
  }

  void cpu_update(const AdamStep& s) {
    if (!z_.overlap_step) {
      queue_cpu(s);
      wait_cpu();
      merge(true);
      return;
    }
    const bool landed = in_flight_;  // the last interval's update reaches the parameters now, one interval late
    if (landed) wait_cpu();
    merge(landed);
    queue_cpu(s);
  }

  // The CPU's Adam over every element with the mean of the accumulated gradients.
  void queue_cpu(const AdamStep& s) {
    Stream& host = dev_.host();
    host.wait(dev_.copies().record());  // the accumulation has landed
    const DeviceBuffer& acc = acc_[acc_now_];
    if (accumulated_ > 1) dev_.divide(host, acc.span(), static_cast<float>(accumulated_));
    for (const OptimizerPart& p : ctx_.parts) {
      dev_.adam(host, s, p.segments, master(p), slot(acc, p), slot(m_, p),
                slot(v_, p), {});
    }
    in_flight_ = true;
    accumulated_ = 0;
    if (z_.overlap_step) acc_now_ ^= 1;  // the next interval accumulates beside the one the CPU reads
  }

  void wait_cpu() {
    dev_.host().synchronize();  // rethrows a failed update
    in_flight_ = false;
  }

  // The masters take the device's values of the columns it updates and, if `apply`, the
  // parameters take the masters (temp_copy_param): the CPU's result reaches the others.
  void merge(bool apply) {
    Stream& c = dev_.compute();
    for (std::size_t i = 0; i < ctx_.parts.size(); ++i) {
      const OptimizerPart& p = ctx_.parts[i];
      cols_.take(c, static_cast<int>(i), 0, master(p));
      if (apply) dev_.copy(c, p.params, master(p));
    }
    c.synchronize();
  }

  ZenflowOptions z_;
  ZenflowColumns cols_;        // the device's side: the selected columns, their moments (device tier)
  DeviceBuffer master_;        // (state_numel) f32, host tier: fp32 master parameters
  DeviceBuffer m_, v_;         // (state_numel) f32, host tier: the CPU's Adam moments
  DeviceBuffer acc_[2];        // (state_numel) f32, host tier: gradients summed since the last CPU update (two with overlap_step)
  int acc_now_ = 0;            // the accumulation buffer this interval fills
  int accumulated_ = 0;        // steps summed into it
  bool in_flight_ = false;     // a CPU update queued and not yet applied
  std::optional<ZenflowCounters> restored_;  // a checkpoint's, being loaded
};

}  // namespace

std::unique_ptr<ShardOptimizer> make_zenflow_optimizer(const OptimizerContext& ctx) { return std::make_unique<ZenflowOptimizer>(ctx); }

}  // namespace zero
