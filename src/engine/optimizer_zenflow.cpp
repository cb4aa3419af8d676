// ZenFlow (DeepSpeed's zero_optimization.zenflow; its rules in zenflow.h): ZeRO-Offload split in
// two. The important columns of every 2-D weight in this rank's part, and its 1-D parameters
// (biases, norms: DeepSpeed updates them whole with the selected columns), are updated every step
// by Adam on the device, with their moments in the device tier; every element's gradient is
// accumulated in host memory, and the CPU's Adam, with the host moments and f32 masters of
// plain offload, applies their mean every update_interval steps to the columns not selected.
//
// A column is one of a weight's (out, in) matrix's `in` columns as DeepSpeed's are; a rank ranks
// the columns over the whole rows of the weight its slice holds (zenflow.h: whole_rows; a row the
// slice cuts is the CPU's alone), as DeepSpeed ranks the columns of each rank's partition: the
// ranks choose apart.
//
// Applying the CPU's result is DeepSpeed's temp_copy_param: the device's selected columns and
// 1-D parameters are saved, the part's parameters take the masters, the saved values go back.
// At every CPU update, before it is queued, the masters take those device values (DeepSpeed's
// sync_fp32_param_from_gpu, which it makes at a selection), so that a column that leaves the
// selection goes on from where the device left it.
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

namespace zero {
namespace {

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

class ZenflowOptimizer final : public HostGradientOptimizer {
 public:
  explicit ZenflowOptimizer(const OptimizerContext& ctx) : HostGradientOptimizer(ctx, 1), z_(ctx.offload.zenflow) {
    ZERO_CHECK(ctx.dtype == Dtype::kF32, "ZenFlow in ", dtype_label(ctx.dtype));
    const std::size_t n = ctx.state_numel;
    master_ = host_buffer(master_category(ctx.dtype), n, "fp32 master parameter shard", Dtype::kF32);
    m_ = host_buffer(Category::kOptimizerState, n, "Adam first moment shard", Dtype::kF32);
    v_ = host_buffer(Category::kOptimizerState, n, "Adam second moment shard", Dtype::kF32);
    grads_[0] = host_buffer(Category::kGradients, n, "gradient shard", ctx.dtype);
    for (int i = 0; i < (z_.overlap_step ? 2 : 1); ++i) acc_[i] = host_buffer(Category::kGradients, n, "ZenFlow's accumulated gradient shard", ctx.dtype);
    std::size_t device_numel = 0;
    for (const OptimizerPart& p : ctx_.parts) {
      ZERO_CHECK(on_device(p), "ZenFlow with the parameters on the host tier");
      runs_.push_back(runs_of(p, device_numel));
      dev_.init(dev_.compute(), ctx.layout.unit(p.unit), p.segments, ctx.seed, master(p));
    }
    // (device_numel) f32, device tier: the selected columns' and 1-D parameters' Adam moments,
    // and their parameters and gradient packed for Adam.
    dm_ = dev_.alloc(Tier::kDevice, Category::kOptimizerState, device_numel, "ZenFlow's first moment of the selected columns");
    dv_ = dev_.alloc(Tier::kDevice, Category::kOptimizerState, device_numel, "ZenFlow's second moment of the selected columns");
    dp_ = dev_.alloc(Tier::kDevice, Category::kParameters, device_numel, "ZenFlow's selected columns, packed");
    dg_ = dev_.alloc(Tier::kDevice, Category::kGradients, device_numel, "ZenFlow's gradient of the selected columns");
  }

  ~ZenflowOptimizer() override {  // a queued CPU update may still read the buffers below
    quiet_sync(dev_.copies());
    quiet_sync(dev_.host());
  }

  void gradient_landed(const OptimizerPart&, const Handle&) override {}  // everything waits for the step
  void prepare(const AdamStep&) override {}

  void step(const AdamStep& s) override {
    const std::int64_t t = steps_++;  // from 0, as zenflow.h counts
    if (zenflow::in_warm_up(z_, t)) return warm_up_step(s);
    if (zenflow::is_selection_step(z_, t)) select();
    accumulate();
    device_step(scalars(s, t - z_.full_warm_up_rounds + 1));
    if (zenflow::is_update_step(z_, t)) cpu_update(s);
    dev_.copies().synchronize();  // the accumulation read this step's gradient, which the next step's replaces
  }

  void lamb_moments(const LambStep&, std::vector<LambNorms>&) override { ZERO_CHECK(false, "Lamb with ZenFlow"); }
  void lamb_update(const LambStep&, const std::vector<float>&) override { ZERO_CHECK(false, "Lamb with ZenFlow"); }

  DeviceSpan state(int u, StateTensor tensor) override {
    const OptimizerPart& p = ctx_.parts.at(u);
    return adam_state(p, tensor, master(p), m_, v_);
  }

  bool update_in_flight() override {
    if (in_flight_) dev_.host().synchronize();
    return false;
  }

  void state_written(std::int64_t, bool) override {
    throw ConfigError("[zenflow] a checkpoint cannot be loaded into a ZenFlow run yet (the device's moments of the selected "
                      "columns and the accumulated gradients are not in checkpoints): remove zero_optimization.zenflow to resume");
  }

  // The CPU update in flight (overlap_step) is applied now rather than at the next update.
  bool synchronize() override {
    if (!in_flight_) return false;
    wait_cpu();
    apply();
    return true;
  }

 private:
  DeviceSpan master(const OptimizerPart& p) const { return master_.sub(p.offset, p.params.size()); }

  // The runs of part p's parameters; `device_numel` grows by their device-side capacity.
  std::vector<ColumnRun> runs_of(const OptimizerPart& p, std::size_t& device_numel) const {
    std::vector<ColumnRun> runs;
    for (const Segment& seg : p.segments) {
      if (seg.param < 0) continue;
      const std::vector<std::int64_t>& shape = ctx_.layout.unit(p.unit).params.at(seg.param).spec.shape;
      ColumnRun r;
      r.offset = seg.offset;
      r.numel = r.packed = seg.numel;
      r.first = seg.param_offset;
      r.segment = seg;
      r.segment.offset = 0;
      if (shape.size() == 2) {
        r.cols = static_cast<std::size_t>(shape[1]);
        const zenflow::WholeRows whole = zenflow::whole_rows(r.first, seg.numel, r.cols);
        r.offset += whole.begin - r.first;
        r.first = whole.begin;
        r.numel = whole.rows * r.cols;
        r.packed = whole.rows * zenflow::columns_to_select(z_, r.cols);
        if (r.packed == 0) continue;  // no whole row, or no column selected: all the CPU's
      }
      r.device_offset = device_numel;
      device_numel += r.packed;
      runs.push_back(std::move(r));
    }
    return runs;
  }

  // Step `t`'s scalars from the step's own (its learning rate, betas, decay).
  AdamStep scalars(const AdamStep& s, std::int64_t t) const {
    AdamConfig c{s.lr, s.beta1, s.beta2, s.eps, s.weight_decay, s.decoupled, ctx_.bias_correction};
    return adam_step_scalars(c, t);
  }

  // Plain offload: the CPU's Adam over every element, the parameters copied back.
  void warm_up_step(const AdamStep& s) {
    Stream& host = dev_.host();
    for (const OptimizerPart& p : ctx_.parts) {
      dev_.adam(host, s, p.segments, master(p), grad(0, p), slot(m_, p), slot(v_, p), {});
      dev_.copy(host, p.params, master(p));
    }
    host.synchronize();
  }

  // Each matrix's top columns by the L1 norm of this step's gradient; the device's moments restart.
  void select() {
    Stream& c = dev_.compute();
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const OptimizerPart& p = ctx_.parts[i];
      for (ColumnRun& r : runs_[i]) {
        if (r.cols == 0) continue;
        const std::vector<double> importance = dev_.column_abs_sums(c, grad(0, p).sub(r.offset, r.numel), r.first, r.cols);
        r.selected = zenflow::top_columns(importance, zenflow::columns_to_select(z_, r.cols));
      }
    }
    dev_.fill(c, dm_.span(), 0.0f);
    dev_.fill(c, dv_.span(), 0.0f);
  }

  void accumulate() {
    Stream& copies = dev_.copies();
    if (accumulated_ == 0) dev_.copy(copies, acc_[acc_now_].span(), grads_[0].span());
    else dev_.add(copies, acc_[acc_now_].span(), grads_[0].span());
    ++accumulated_;
  }

  // Adam on the device over the selected columns and the 1-D parameters, with this step's gradient.
  void device_step(const AdamStep& s) {
    Stream& c = dev_.compute();
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const OptimizerPart& p = ctx_.parts[i];
      for (const ColumnRun& r : runs_[i]) {
        if (r.packed == 0) continue;
        const DeviceSpan params = p.params.sub(r.offset, r.numel), g = grad(0, p).sub(r.offset, r.numel);
        const DeviceSpan dg = dg_.sub(r.device_offset, r.packed), dm = dm_.sub(r.device_offset, r.packed),
                         dv = dv_.sub(r.device_offset, r.packed);
        Segment seg = r.segment;
        seg.numel = r.packed;
        if (r.cols == 0) {
          dev_.copy(c, dg, g);
          dev_.adam(c, s, {seg}, params, dg, dm, dv, {});
          continue;
        }
        const DeviceSpan dp = dp_.sub(r.device_offset, r.packed);
        dev_.gather_columns(c, dg, g, r.first, r.cols, r.selected);
        dev_.gather_columns(c, dp, params, r.first, r.cols, r.selected);
        dev_.adam(c, s, {seg}, dp, dg, dm, dv, {});
        dev_.scatter_columns(c, params, dp, r.first, r.cols, r.selected);
      }
    }
    c.synchronize();
  }

  void cpu_update(const AdamStep& s) {
    if (!z_.overlap_step) {
      queue_cpu(s);
      wait_cpu();
      apply();
      take_device_values();
      return;
    }
    if (in_flight_) {  // the last interval's update reaches the parameters now, one interval late
      wait_cpu();
      apply();
    }
    take_device_values();
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

  // The masters reach the parameters, but for the columns the device updates (temp_copy_param).
  void apply() {
    Stream& c = dev_.compute();
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const OptimizerPart& p = ctx_.parts[i];
      for (const ColumnRun& r : runs_[i]) move_device_values(r, dp_.sub(r.device_offset, r.packed), p.params.sub(r.offset, r.numel), false);
      dev_.copy(c, p.params, master(p));
      for (const ColumnRun& r : runs_[i]) move_device_values(r, dp_.sub(r.device_offset, r.packed), p.params.sub(r.offset, r.numel), true);
    }
    c.synchronize();
  }

  // The masters take the device's values of the columns it updates (sync_fp32_param_from_gpu,
  // made at every CPU update rather than at a selection, where an update may be in flight).
  void take_device_values() {
    Stream& c = dev_.compute();
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const OptimizerPart& p = ctx_.parts[i];
      for (const ColumnRun& r : runs_[i]) {
        const DeviceSpan packed = dp_.sub(r.device_offset, r.packed);
        move_device_values(r, packed, p.params.sub(r.offset, r.numel), false);
        move_device_values(r, packed, master(p).sub(r.offset, r.numel), true);
      }
    }
    c.synchronize();
  }

  // Run r's device-updated elements between `run` (a run of parameters) and `packed`: into
  // packed, or (`back`) from it.
  void move_device_values(const ColumnRun& r, const DeviceSpan& packed, const DeviceSpan& run, bool back) {
    if (r.packed == 0) return;
    Stream& c = dev_.compute();
    if (r.cols == 0) dev_.copy(c, back ? run : packed, back ? packed : run);
    else if (back) dev_.scatter_columns(c, run, packed, r.first, r.cols, r.selected);
    else dev_.gather_columns(c, packed, run, r.first, r.cols, r.selected);
  }

  ZenflowOptions z_;
  std::vector<std::vector<ColumnRun>> runs_;  // per part
  DeviceBuffer master_;        // (state_numel) f32, host tier: fp32 master parameters
  DeviceBuffer m_, v_;         // (state_numel) f32, host tier: the CPU's Adam moments
  DeviceBuffer acc_[2];        // (state_numel) f32, host tier: gradients summed since the last CPU update (two with overlap_step)
  DeviceBuffer dm_, dv_;       // (device_numel) f32, device tier: the device's Adam moments of the selected columns and 1-D parameters
  DeviceBuffer dp_, dg_;       // (device_numel) f32, device tier: their parameters and gradient, packed
  int acc_now_ = 0;            // the accumulation buffer this interval fills
  int accumulated_ = 0;        // steps summed into it
  bool in_flight_ = false;     // a CPU update queued and not yet applied
  std::int64_t steps_ = 0;
};

}  // namespace

std::unique_ptr<ShardOptimizer> make_zenflow_optimizer(const OptimizerContext& ctx) { return std::make_unique<ZenflowOptimizer>(ctx); }

}  // namespace zero
