// The optimizer on the device: Adam's moments (and, for a stage that sheds its gradients, the
// reduced gradient shard) in the device tier; Adam updates the parts' parameters in place.
//
// Reduced gradients: a stage that keeps its gradients reduces in place, and Adam reads them
// there. A stage that sheds them reduce-scatters the first micro-batch straight into the
// gradient shard; later micro-batches into a transient slice that is added to the shard once
// its reduction completes (in micro-batch order, so every stage adds the same numbers in the
// same order). One shed reduction is in flight at a time, bounding the transient slices to one.
//
// Mixed precision: the parts' parameters and the reduced gradients are 16-bit; the optimizer
// keeps the f32 master parameters of its parts (optimizer state, with m and v: K = 12) and Adam
// writes the 16-bit parameters from them in the same pass.
//
// Parameters in the host tier (stage 3 with offload_param alone, as DeepSpeed allows): their home
// is the host, the optimizer's state is here. Each part is updated through a device-tier slice
// staged for it, one part at a time: in f32 the parameters are copied in, updated and copied back;
// in mixed precision the update writes its 16-bit copy into the slice, which is copied back. The
// elements see the operations they see with the parameters on the device: the same bits.
#include <deque>

#include "common/error.h"
#include "engine/optimizer.h"

namespace zero {
namespace {

class DeviceOptimizer final : public ShardOptimizer {
 public:
  explicit DeviceOptimizer(const OptimizerContext& ctx)
      : ctx_(ctx),
        dev_(ctx.device),
        m_(dev_.alloc(Tier::kDevice, Category::kOptimizerState, ctx.state_numel, "Adam first moment")),
        v_(dev_.alloc(Tier::kDevice, Category::kOptimizerState, ctx.state_numel, "Adam second moment")),
        grads_(ctx.layout.num_units()) {
    if (ctx.sheds_gradients) {
      shard_ = dev_.alloc(Tier::kDevice, Category::kGradients, ctx.state_numel, "gradient shard", ctx.dtype);
      for (const OptimizerPart& p : ctx_.parts) grads_[p.unit] = slot(shard_, p);
    }
    if (ctx.dtype != Dtype::kF32) {  // counter-based init: the master holds what the 16-bit copy rounds
      master_ = dev_.alloc(Tier::kDevice, master_category(ctx.dtype), ctx.state_numel, "fp32 master parameters");
      for (const OptimizerPart& p : ctx_.parts) dev_.init(dev_.compute(), ctx.layout.unit(p.unit), p.segments, ctx.seed, slot(master_, p));
    }
  }

  ~DeviceOptimizer() override {
    for (Pending& p : pending_) {
      try {
        p.done.wait();
      } catch (...) {
      }
    }
  }

  void begin_micro_batch(bool first, bool boundary) override {
    if (first) reduced_.assign(ctx_.layout.num_units(), false);
    micro_batches_ = first ? 1 : micro_batches_ + 1;
    boundary_ = boundary;
  }

  DeviceSpan reduce_target(int u) override {
    land_all();  // one shed reduction in flight
    const OptimizerPart& p = part(u);
    if (!reduced_[u]) {  // the unit's first reduction this step goes straight into the shard
      reduced_[u] = true;
      return slot(shard_, p);
    }
    transient_ = dev_.alloc(Tier::kDevice, Category::kCommBuffers, p.params.size(), "reduced gradient slice", ctx_.dtype);
    return transient_.span();
  }

  void reduced(int u, const DeviceSpan& region, const Handle& done) override {
    if (!ctx_.sheds_gradients) grads_[u] = region;
    pending_.push_back({u, region, done, boundary_ ? gradient_divisor(ctx_.layout.world_size(), micro_batches_, ctx_.predivide) : 1.0f});
  }

  void finish() override { land_all(); }

  double sum_squares() override {
    double acc = 0.0;
    for (const OptimizerPart& p : ctx_.parts) acc = dev_.sum_squares(dev_.compute(), grads_[p.unit].sub(p.norm_begin, p.norm_numel), acc);
    return acc;
  }

  void scale(float c) override {
    for (const OptimizerPart& p : ctx_.parts) dev_.scale(dev_.compute(), grads_[p.unit], c);
  }

  bool nonfinite() override {
    bool any = false;
    for (const OptimizerPart& p : ctx_.parts) any = dev_.nonfinite(dev_.compute(), grads_[p.unit].sub(p.norm_begin, p.norm_numel)) || any;
    return any;
  }

  void prepare(const AdamStep&) override {}

  void step(const AdamStep& s) override {
    for (const OptimizerPart& p : ctx_.parts) {
      const Target t = target(p, true);
      dev_.adam(dev_.compute(), s, p.segments, t.params, grads_[p.unit], slot(m_, p), slot(v_, p), t.copy);
      write_back(p);
    }
  }

  void lamb_moments(const LambStep& s, std::vector<LambNorms>& sums) override {
    for (const OptimizerPart& p : ctx_.parts) {
      const Target t = target(p, false);
      lamb_add_part(ctx_.layout, p, dev_.lamb_moments(dev_.compute(), s, p.segments, t.params, grads_[p.unit], slot(m_, p), slot(v_, p),
                                                      p.norm_begin, p.norm_numel), sums);
      staging_.reset();  // phase 1 reads the parameters only
    }
  }

  void lamb_update(const LambStep& s, const std::vector<float>& coef) override {
    for (const OptimizerPart& p : ctx_.parts) {
      const Target t = target(p, true);
      dev_.lamb_update(dev_.compute(), s, p.segments, lamb_part_coefficients(ctx_.layout, p, coef), t.params, slot(m_, p), slot(v_, p),
                       t.copy);
      write_back(p);
    }
  }

  // In f32 the parameters the part updates are its masters; in mixed precision the f32 slot.
  DeviceSpan state(int u, StateTensor tensor) override {
    const OptimizerPart& p = part(u);
    return adam_state(p, tensor, master_.empty() ? p.params : slot(master_, p), m_, v_);
  }
  // Mixed precision: the 16-bit parameters from the loaded masters, rounded to nearest even as
  // Adam's fused copy rounds them.
  void state_written(std::int64_t, bool in_flight) override {
    ZERO_CHECK(!in_flight, "an update in flight without the delayed update");
    if (master_.empty()) return;
    for (const OptimizerPart& p : ctx_.parts) dev_.convert(dev_.compute(), p.params, slot(master_, p));
    dev_.compute().synchronize();
  }

 private:
  struct Pending {
    int unit;
    DeviceSpan region;
    Handle done;
    float divisor;  // N * micro-batches / predivide * loss scale at the step's last micro-batch; 1 before it
  };

  // What an update of part p writes: the f32 parameters it updates (its masters in mixed
  // precision) and the 16-bit copy it writes in the same pass (empty in f32). A part whose
  // parameters are in the host tier gets a device-tier staging slice in place of them: in f32
  // holding a copy of them (`written`: to be copied back by write_back), in mixed precision
  // receiving the 16-bit copy.
  struct Target {
    DeviceSpan params, copy;
  };
  Target target(const OptimizerPart& p, bool written) {
    const bool home_on_host = p.params.tier() == Tier::kHost;
    if (!master_.empty()) {
      if (!home_on_host) return {slot(master_, p), p.params};
      if (!written) return {slot(master_, p), {}};
      // Zeroed: the update writes the parameters' elements only, and write_back copies the whole
      // slice, padding included, which the peers gather (a reused block would hold other bits).
      staging_ = dev_.alloc(Tier::kDevice, Category::kParameters, p.params.size(), "parameter slice staged for the optimizer", ctx_.dtype, true);
      return {slot(master_, p), staging_.span()};
    }
    if (!home_on_host) return {p.params, {}};
    staging_ = dev_.alloc(Tier::kDevice, Category::kParameters, p.params.size(), "parameter slice staged for the optimizer", Dtype::kF32, false);
    dev_.copy(dev_.compute(), staging_.span(), p.params);
    return {staging_.span(), {}};
  }
  // The staged slice (if any) to the part's parameters in the host tier; the slice is freed.
  void write_back(const OptimizerPart& p) {
    if (staging_.empty()) return;
    dev_.copy(dev_.compute(), p.params, staging_.span());
    dev_.compute().synchronize();
    staging_.reset();
  }

  const OptimizerPart& part(int u) const { return ctx_.parts.at(u); }  // one part per unit, in unit order

  // Waits for the reductions in flight, in issue order; adds transient slices into the shard and
  // averages at the step's last micro-batch: the one division every stage performs.
  void land_all() {
    while (!pending_.empty()) {
      Pending p = pending_.front();
      pending_.pop_front();
      p.done.wait();
      if (!p.region.same_as(grads_[p.unit])) {
        dev_.add(dev_.compute(), grads_[p.unit], p.region);
        transient_.reset();
      }
      if (p.divisor != 1.0f) dev_.divide(dev_.compute(), grads_[p.unit], p.divisor);
    }
  }

  OptimizerContext ctx_;
  Device& dev_;
  DeviceBuffer m_, v_;                // (state_numel) f32, device tier, optimizer state
  DeviceBuffer master_;               // (state_numel) f32, device tier, optimizer state: mixed precision only
  DeviceBuffer shard_;                // (state_numel) compute dtype, device tier: reduced gradients (shedding stages)
  DeviceBuffer transient_;            // (part) compute dtype, device tier, comm: a later micro-batch's reduced slice
  DeviceBuffer staging_;              // (part) compute dtype, device tier: host-tier parameters staged for one update
  std::vector<DeviceSpan> grads_;     // (num_units) where each part's reduced gradient is
  std::deque<Pending> pending_;
  std::vector<bool> reduced_;         // (num_units) reduced at least once this step
  int micro_batches_ = 0;
  bool boundary_ = true;
};

}  // namespace

Category master_category(Dtype compute) { return compute == Dtype::kF32 ? Category::kParameters : Category::kOptimizerState; }

std::unique_ptr<ShardOptimizer> make_device_optimizer(const OptimizerContext& ctx) { return std::make_unique<DeviceOptimizer>(ctx); }

std::unique_ptr<ShardOptimizer> make_optimizer(const OptimizerContext& ctx) {
  if (compresses_all_reduce(ctx.kind)) return make_onebit_optimizer(ctx);
  if (ctx.offload.zenflow.enabled) return ctx.offload.optimizer_nvme ? make_zenflow_nvme_optimizer(ctx) : make_zenflow_optimizer(ctx);
  if (ctx.offload.optimizer_nvme) return make_nvme_optimizer(ctx);
  return ctx.offload.optimizer ? make_host_optimizer(ctx) : make_device_optimizer(ctx);
}

}  // namespace zero
