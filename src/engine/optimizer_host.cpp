// The optimizer on the host (ZeRO-Offload): Adam's moments, the fp32 master parameters and the
// reduced gradients in the host tier; Adam runs on the CPU (the device's host stream).
//
// As each unit's reduced gradient lands in the host gradient state (optimizer_host_gradients.h), the host stream runs Adam over that unit's part and copies the updated parameters back
// to the device, while backward goes on with the units before it. Clipping needs the norm of
// every part first, so with clipping Adam waits for the step. Every element sees the same
// operations in the same order as on the device, so the weights are bit-identical.
//
// A part whose parameters are in the host tier (stage 3 with offload_param) is its own master:
// Adam updates it in place and nothing is copied back.
//
// Mixed precision: the host gradient shard is 16-bit like the device's (so every element sees
// the same operations as without offload, and the weights stay bit-identical), the master is a
// separate f32 buffer for every part, and Adam writes the 16-bit parameters in the same pass
// (its fused copy): into the host-tier shard with offload_param, else into a host 16-bit copy
// that is then copied to the device, 2 bytes per parameter over the link instead of 4.
//
// The delayed update (DPU): after the warm-up steps, step t's Adam is queued on the host stream
// and the step returns; step t+1's forward and backward run with the parameters from before step
// t's update. At step t+1's optimizer phase the result is copied back (the stage then gathers
// it) and step t+1's Adam is queued. Two host gradient buffers alternate, so gradients landing
// for step t+1 never meet the CPU reading step t's.
#include <fstream>

#include "common/error.h"
#include "engine/optimizer_host_gradients.h"

namespace zero {
namespace {

// Host memory this process may still take, from /proc/meminfo (MemAvailable), or 0 if unknown.
std::uint64_t host_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t kib = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

}  // namespace

// Refuses, before anything is allocated, host state that this node cannot hold.
void check_host_room(Device& dev, std::size_t state_numel, const OffloadOptions& offload, int local_ranks, Dtype compute) {
  // m, v; the fp32 master (or, with offload_param, the stage's host parameter shard); gradients;
  // in mixed precision the 16-bit parameters too. On the NVMe tier: the gradients, and at most
  // buffer_count sub-groups of the rest.
  // ZenFlow's sum of the gradients between its CPU updates: one or two more host gradient
  // buffers, or on the NVMe tier one more f32 tensor a sub-group.
  const ZenflowOptions& z = offload.zenflow;
  const int sums = !z.enabled ? 0 : offload.optimizer_nvme ? (z.update_interval > 1 ? 1 : 0) : (z.overlap_step ? 2 : 1);
  const std::uint64_t grads = (offload.delayed_update ? 2 : 1) * dtype_bytes(compute) + (offload.optimizer_nvme ? 0 : sums * sizeof(float));
  const std::uint64_t state_bytes = (3 + (offload.optimizer_nvme ? sums : 0)) * sizeof(float) + (compute == Dtype::kF32 ? 0 : dtype_bytes(compute));
  const std::uint64_t swapped = offload.optimizer_nvme
                                    ? std::min(state_numel, offload.nvme.sub_group_size) * static_cast<std::uint64_t>(offload.nvme.buffer_count)
                                    : state_numel;
  const std::uint64_t per_rank = state_numel * grads + swapped * state_bytes;
  const int local = std::max(1, local_ranks);
  const std::uint64_t available = dev.computes() ? host_available_bytes() : 0;
  const auto cap = dev.ledger().capacity(Tier::kHost);
  const std::uint64_t room = cap ? *cap : available / static_cast<std::uint64_t>(local);
  if ((cap || available > 0) && per_rank > room) {
    throw OutOfMemoryError(cat("[offload] the offloaded state needs ", format_bytes_beside(per_rank, room), " of host memory per rank (",
                               format_bytes(per_rank * local), " for the ", local, " ranks on this node) but ",
                               format_bytes_beside(room, per_rank), " per rank is available: use more ranks or nodes, or turn offload off"));
  }
}

namespace {

class HostOptimizer final : public HostGradientOptimizer {
 public:
  explicit HostOptimizer(const OptimizerContext& ctx) : HostGradientOptimizer(ctx, ctx.offload.delayed_update ? 2 : 1) {
    const std::size_t n = ctx.state_numel;
    if (needs_master()) master_ = host_buffer(master_category(ctx.dtype), n, "fp32 master parameter shard", Dtype::kF32);
    if (mixed() && has_device_params()) copy_ = host_buffer(Category::kParameters, n, "16-bit parameters for the device", ctx.dtype);
    m_ = host_buffer(Category::kOptimizerState, n, "Adam first moment shard", Dtype::kF32);
    v_ = host_buffer(Category::kOptimizerState, n, "Adam second moment shard", Dtype::kF32);
    for (int i = 0; i < grad_buffers_; ++i) grads_[i] = host_buffer(Category::kGradients, n, "gradient shard", ctx.dtype);
    for (const OptimizerPart& p : ctx_.parts) {
      if (!own_master(p)) continue;
      const UnitPlace& unit = ctx.layout.unit(p.unit);
      dev_.init(dev_.compute(), unit, p.segments, ctx.seed, master(p));
    }
  }

  ~HostOptimizer() override {  // Adam or a copy in flight may still read the buffers below
    quiet_sync(dev_.copies());
    quiet_sync(dev_.host());
  }

  void gradient_landed(const OptimizerPart& part, const Handle& landed) override {
    if (!adam_during_backward()) return;
    adam_on_current_ = true;
    dev_.host().wait(landed);
    update(part, *next_step_, current_, true);
  }

  void scale(float c) override {
    // Adam queued during backward reads this buffer; a delayed step's Adam reads the other one.
    ZERO_CHECK(!adam_on_current_, "gradients scaled after Adam started on them");
    HostGradientOptimizer::scale(c);
  }

  void prepare(const AdamStep& s) override { next_step_ = s; }

  void step(const AdamStep& s) override {
    ++steps_;
    if (!delayed(steps_)) {
      if (adam_on_current_) {
        // Adam already ran during backward with the scalars given to prepare().
        if (!(s == *next_step_)) {
          wait_adam();
          throw ConfigError("[engine] the learning rate changed between the last forward_backward and step(): with "
                            "offload, Adam starts during backward, so set the learning rate before the step's first "
                            "forward_backward");
        }
      } else {  // clipping: Adam now, over every part
        for (const OptimizerPart& p : ctx_.parts) update(p, s, current_, true);
      }
      wait_adam();
      return;
    }
    // The delayed update: bring the previous step's result to the device, then queue this one.
    wait_adam();
    copy_all_to_device();
    for (const OptimizerPart& p : ctx_.parts) update(p, s, current_, false);
    current_ = (current_ + 1) % grad_buffers_;
    dirty_ = true;
  }

  // Lamb waits for the step (adam_waits_for_step): its sums need every part's moments first.
  void lamb_moments(const LambStep& s, std::vector<LambNorms>& sums) override {
    ZERO_CHECK(!delayed(steps_ + 1), "Lamb with the delayed update");
    for (const OptimizerPart& p : ctx_.parts) {
      const auto per_segment = dev_.lamb_moments(dev_.host(), s, p.segments, master(p), grad(current_, p), slot(m_, p),
                                                 slot(v_, p), p.norm_begin, p.norm_numel);
      lamb_add_part(ctx_.layout, p, per_segment, sums);
    }
  }

  void lamb_update(const LambStep& s, const std::vector<float>& coef) override {
    ++steps_;
    Stream& host = dev_.host();
    for (const OptimizerPart& p : ctx_.parts) {
      dev_.lamb_update(host, s, p.segments, lamb_part_coefficients(ctx_.layout, p, coef), master(p), slot(m_, p),
                       slot(v_, p), fused_copy(p));
      if (on_device(p)) dev_.copy(host, p.params, device_source(p));
      adam_queued_ = true;
      write_to_disk(p);
    }
    wait_adam();
  }

  DeviceSpan state(int u, StateTensor tensor) override {
    const OptimizerPart& p = ctx_.parts.at(u);
    return adam_state(p, tensor, master(p), m_, v_);
  }

  bool update_in_flight() override {
    wait_adam();
    return dirty_;
  }

  // The 16-bit copies are rounded from the loaded masters (as Adam's fused copy rounds them);
  // the device parameters are copies of the masters, or, with the delayed update in flight,
  // were loaded as they were (step t-1's) and get step t's at the next step, as in the
  // uninterrupted run.
  void state_written(std::int64_t steps_done, bool in_flight) override {
    ZERO_CHECK(!adam_queued_, "optimizer state written while Adam runs");
    ZERO_CHECK(!in_flight || delayed(steps_done + 1), "an update in flight without a delayed next step");
    for (const OptimizerPart& p : ctx_.parts) {
      if (mixed() && own_master(p)) dev_.convert(dev_.host(), fused_copy(p), master(p));
      write_to_disk(p);
    }
    dev_.host().synchronize();
    if (!in_flight) copy_all_to_device();
    dirty_ = in_flight;
    steps_ = steps_done;
  }

  bool synchronize() override {
    if (!dirty_) return false;
    wait_adam();
    copy_all_to_device();
    dirty_ = false;
    return true;
  }

 private:
  bool delayed(std::int64_t step) const { return ctx_.offload.delayed_update && step > ctx_.offload.warmup_steps; }
  // Not with the parameters on disk: their parts share the stage's window, one part at a time.
  bool adam_during_backward() const {
    return !ctx_.adam_waits_for_step && !delayed(steps_ + 1) && next_step_.has_value() && !ctx_.param_sink;
  }
  // A part needs a master of its own unless its parameters are f32 on the host (offload_param
  // "cpu"; on "nvme" they are the stage's window).
  bool own_master(const OptimizerPart& p) const { return mixed() || on_device(p) || ctx_.param_sink; }
  // offload_param "nvme": the part's parameters, in the stage's window, to its swap file (f32:
  // copied from the master first), before the next part writes the window.
  void write_to_disk(const OptimizerPart& p) {
    if (on_device(p) || !ctx_.param_sink) return;
    if (!mixed()) dev_.copy(dev_.host(), p.params, master(p));
    dev_.host().synchronize();
    ctx_.param_sink->written(p.unit, 0, p.params);
  }
  bool has_device_params() const {
    for (const OptimizerPart& p : ctx_.parts)
      if (on_device(p)) return true;
    return false;
  }
  bool needs_master() const {
    for (const OptimizerPart& p : ctx_.parts)
      if (own_master(p)) return true;
    return false;
  }
  DeviceSpan master(const OptimizerPart& p) const { return own_master(p) ? master_.sub(p.offset, p.params.size()) : p.params; }
  // Mixed precision: where Adam's fused copy writes the part's 16-bit parameters (the host-tier
  // shard itself, or the host copy bound for the device); empty in f32.
  DeviceSpan fused_copy(const OptimizerPart& p) const {
    if (!mixed()) return {};
    return on_device(p) ? copy_.sub(p.offset, p.params.size()) : p.params;
  }
  // What is copied to a device part's parameters after Adam.
  DeviceSpan device_source(const OptimizerPart& p) const { return mixed() ? fused_copy(p) : master(p); }
  // On the host stream: Adam over one part, then (unless delayed) its parameters to the device.
  void update(const OptimizerPart& p, const AdamStep& s, int buffer, bool copy_back) {
    Stream& host = dev_.host();
    dev_.adam(host, s, p.segments, master(p), grad(buffer, p), slot(m_, p), slot(v_, p),
              fused_copy(p));
    if (copy_back && on_device(p)) dev_.copy(host, p.params, device_source(p));
    adam_queued_ = true;
    write_to_disk(p);
  }

  void copy_all_to_device() {
    for (const OptimizerPart& p : ctx_.parts)
      if (on_device(p)) dev_.copy(dev_.copies(), p.params, device_source(p));
    dev_.copies().synchronize();
  }

  void wait_adam() {
    adam_on_current_ = false;
    if (!adam_queued_) return;
    adam_queued_ = false;
    dev_.host().synchronize();  // rethrows a failed update
  }

  DeviceBuffer master_;      // (state_numel) f32, host tier: fp32 master parameters of the parts that need one
  DeviceBuffer copy_;        // (state_numel) compute dtype, host tier: mixed precision, the 16-bit parameters bound for the device
  DeviceBuffer m_, v_;       // (state_numel) f32, host tier: Adam's moments
  bool dirty_ = false;
  bool adam_on_current_ = false;  // Adam queued during backward reads grads_[current_]
  bool adam_queued_ = false;
  std::int64_t steps_ = 0;
  std::optional<AdamStep> next_step_;
};

}  // namespace

std::unique_ptr<ShardOptimizer> make_host_optimizer(const OptimizerContext& ctx) { return std::make_unique<HostOptimizer>(ctx); }

}  // namespace zero
