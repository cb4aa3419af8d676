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
// Mixed precision (bf16, fp16), as DeepSpeed's ZenFlow runs it: the parameters and the step's
// gradient are 16-bit, the CPU's masters, moments and accumulated gradient f32 (DeepSpeed sums
// into f32 buffers, its master_weights_and_grads_dtype); the masters of the device's columns
// take their 16-bit values, widened, and the parameters take the masters, rounded. The device's
// side is zenflow_columns.h's. fp16: a step whose gradient overflows is skipped whole (the
// engine's rule): neither side sees it, nor does the sum.
//
// gradient_clipping, as DeepSpeed clips ZenFlow: the CPU's mean gradient by its own norm at the
// update (clip_mean); the device's Adam takes each step's gradient unclipped (DeepSpeed's
// selective optimizer reads it as it is); in the warm-up, plain offload's clipping.
//
// overlap_step: the CPU's Adam of an interval is queued on the host stream and the step returns;
// the next interval's steps run meanwhile (their gradients accumulate into a second host buffer),
// and at the next update its result is applied before the next one is queued: one interval late.
//
// Streams: the accumulation runs on the copy stream, the device's Adam on the compute stream,
// the CPU's Adam on the host stream (which waits for the accumulation), so that a queued CPU
// update never holds up the next steps.
#include <cmath>

#include "common/error.h"
#include "engine/optimizer_host_gradients.h"
#include "engine/zenflow.h"
#include "engine/zenflow_columns.h"

namespace zero {
namespace {

class ZenflowOptimizer final : public HostGradientOptimizer {
 public:
  explicit ZenflowOptimizer(const OptimizerContext& ctx) : HostGradientOptimizer(ctx, 1), z_(ctx.offload.zenflow), cols_(ctx_) {
    const std::size_t n = ctx.state_numel;
    master_ = host_buffer(master_category(ctx.dtype), n, "fp32 master parameter shard", Dtype::kF32);
    m_ = host_buffer(Category::kOptimizerState, n, "Adam first moment shard", Dtype::kF32);
    v_ = host_buffer(Category::kOptimizerState, n, "Adam second moment shard", Dtype::kF32);
    grads_[0] = host_buffer(Category::kGradients, n, "gradient shard", ctx.dtype);
    for (int i = 0; i < (z_.overlap_step ? 2 : 1); ++i) acc_[i] = host_buffer(Category::kGradients, n, "ZenFlow's accumulated gradient shard", Dtype::kF32);
    for (const OptimizerPart& p : ctx_.parts) dev_.init(dev_.compute(), ctx.layout.unit(p.unit), p.segments, ctx.seed, master(p));
  }

  ~ZenflowOptimizer() override {  // a queued CPU update may still read the buffers below
    quiet_sync(dev_.copies());
    quiet_sync(dev_.host());
  }

  void gradient_landed(const OptimizerPart&, const Handle&) override {}  // everything waits for the step

  // The engine's clipping, by the step's gradient norm: the warm-up's (plain offload's) alone.
  // After it DeepSpeed's device update takes the step's gradient unclipped, and the CPU's mean
  // is clipped at its update by its own norm (clip_mean).
  void scale(float c) override {
    if (zenflow::in_warm_up(z_, cols_.steps())) HostGradientOptimizer::scale(c);
  }
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
      to_params(host, p);
    }
    host.synchronize();
  }

  // The parameters take the masters (mixed precision: rounded, as DeepSpeed's copy_ from its f32
  // partition into the 16-bit one rounds them).
  void to_params(Stream& s, const OptimizerPart& p) { params_from_masters(s, p.params, master(p)); }

  void accumulate() {
    Stream& copies = dev_.copies();
    const DeviceSpan acc = acc_[acc_now_].span(), g = grads_[0].span();
    if (accumulated_ > 0) dev_.add(copies, acc, g);  // mixed precision: the 16-bit gradient widened, summed in f32
    else if (mixed()) dev_.convert(copies, acc, g);
    else dev_.copy(copies, acc, g);
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
    clip_mean(host, acc);
    for (const OptimizerPart& p : ctx_.parts) {
      dev_.adam(host, s, p.segments, master(p), slot(acc, p), slot(m_, p),
                slot(v_, p), {});
    }
    in_flight_ = true;
    accumulated_ = 0;
    if (z_.overlap_step) acc_now_ ^= 1;  // the next interval accumulates beside the one the CPU reads
  }

  // gradient_clipping: the CPU's mean gradient scaled by clip / (norm + 1e-6) where that is below
  // one, its norm over every rank's shard (DeepSpeed's unscale_and_clip_grads on the summed
  // gradient at ZenFlow's CPU step), summed as the engine sums the step gradient's norm.
  void clip_mean(Stream& host, const DeviceBuffer& acc) {
    if (ctx_.gradient_clipping <= 0.0f) return;
    ZERO_CHECK(ctx_.norm_group != nullptr, "ZenFlow's clipping without the ranks to sum its norm over");
    double partial = 0.0;
    for (const OptimizerPart& p : ctx_.parts) partial = dev_.sum_squares(host, slot(acc, p).sub(p.norm_begin, p.norm_numel), partial);
    std::vector<double> partials(static_cast<std::size_t>(ctx_.norm_group->size()));
    ctx_.norm_group->all_gather_bytes(&partial, sizeof partial, partials.data());
    double total = 0.0;
    for (double x : partials) total += x;
    const double coef = ctx_.gradient_clipping / (std::sqrt(total) + 1e-6);
    if (coef < 1.0) dev_.scale(host, acc.span(), static_cast<float>(coef));
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
      if (apply) to_params(c, p);
    }
    c.synchronize();
  }

  ZenflowOptions z_;
  ZenflowColumns cols_;        // the device's side: the selected columns, their moments (device tier)
  DeviceBuffer master_;        // (state_numel) f32, host tier: fp32 master parameters
  DeviceBuffer m_, v_;         // (state_numel) f32, host tier: the CPU's Adam moments
  DeviceBuffer acc_[2];        // (state_numel) f32, host tier: gradients summed since the last CPU update (two with overlap_step), f32 in mixed precision too
  int acc_now_ = 0;            // the accumulation buffer this interval fills
  int accumulated_ = 0;        // steps summed into it
  bool in_flight_ = false;     // a CPU update queued and not yet applied
  std::optional<ZenflowCounters> restored_;  // a checkpoint's, being loaded
};

}  // namespace

std::unique_ptr<ShardOptimizer> make_zenflow_optimizer(const OptimizerContext& ctx) { return std::make_unique<ZenflowOptimizer>(ctx); }

}  // namespace zero
