// 1-bit Adam and 0/1 Adam (settings.h: OneBitAdamConfig, ZeroOneAdamConfig) at stage 0: every
// rank holds every element's parameters, gradients and moments, as DeepSpeed's OnebitAdam and
// ZeroOneAdam do without ZeRO. 1-bit Adam first:
//
// Its steps, numbered from 1 as Adam's (skipped fp16 steps aside):
//   1                  initialisation only, nothing updated (DeepSpeed's first step allocates its
//                      buffers and returns before any update)
//   2 .. freeze_step   Adam (decoupled decay, no bias correction) over the all-reduced gradient
//   after freeze_step  the warm-up's second moment v is frozen; the stage keeps the gradient local
//                      (local_gradients()), each rank updates its momentum from its own gradient,
//                      the momenta are averaged by the compressed all-reduce
//                      (compressed_all_reduce.h, one tensor per unit, with this rank's error
//                      feedback), and every rank applies the same update:
//                        m = fma(beta1, m, (1 - beta1) g_local);  m = compressed average of m
//                        p = p (1 - lr wd);  p = fma(-lr, m / (sqrt(v) + eps), p)
// 0/1 Adam (DeepSpeed's ZeroOneAdam), its step 1 likewise only initialising; then, with lr, wd
// and eps as above, u the accumulated local update and lrs the learning rates summed since the last
// synchronisation (ZeroOneSchedule below keeps the intervals):
//   variance phase (steps <= var_freeze_step): a step whose gradient the stage all-reduced (every
//     var_interval-th) updates m and v from it; any other averages its local gradient through the
//     compressed all-reduce and updates m alone; p -= lr (m / (sqrt(v) + eps) + wd p)
//   frozen (after): m from the local gradient, lrs += lr, the same update of p, u -= lr (...);
//     every local_interval-th step the ranks synchronise: u = u (sqrt(v) + eps), averaged
//     compressed; m = -u / lrs; p = p_sync + u / (sqrt(v) + eps); p_sync = p; u = 0, lrs = 0.
//     Other steps send nothing.
// The errors are zeroed when the variance freezes (they then feed back u, not gradients).
// DeepSpeed undoes the local steps with p -= u, which leaves each rank its own rounding of them, so
// its replicas drift apart in the last bits; zero keeps p_sync, the parameters of the last
// synchronisation (4 bytes per parameter more), so every rank holds the same bits after each.
//
// The compressed steps run on the CPU over the device's host memory (the engine refuses other
// placements). Mixed precision as the device optimizer's: f32 masters beside m and v, 16-bit
// gradients widened, the 16-bit parameters rounded (to nearest even) from the updated masters.
// The errors are optimizer state in the ledger; a checkpoint keeps m and v but not the errors (nor
// 0/1 Adam's u and intervals): a loaded one starts them afresh, as DeepSpeed does.
#include <algorithm>
#include <cmath>
#include <deque>

#include "common/error.h"
#include "common/half.h"
#include "engine/compressed_all_reduce.h"
#include "engine/optimizer.h"

namespace zero {
namespace {

// 0/1 Adam's policies, as DeepSpeed's ZeroOneAdam counts them: the variance is updated at
// intervals that double every var_update_scaler updates; after the freeze the ranks synchronise
// at intervals that double every local_step_scaler steps, up to local_step_clipper.
struct ZeroOneSchedule {
  std::int64_t var_interval = 1, var_counter = 0, local_interval = 1, local_counter = 0;
  bool reduce_next = true;  // the next step's gradient is all-reduced (DeepSpeed's enable_backward_allreduce)
  bool frozen = false;

  // After step k (from 2; step 1 only initialises). True when the variance froze at this step.
  bool advance(const ZeroOneAdamConfig& c, std::int64_t k) {
    if (!frozen) {
      if (k % var_interval == 0 && ++var_counter == c.var_update_scaler) {
        var_counter = 0;
        var_interval *= 2;
      }
      reduce_next = (k + 1) % var_interval == 0;
    } else if (++local_counter == c.local_step_scaler) {
      local_counter = 0;
      local_interval = std::min(c.local_step_clipper, local_interval * 2);
    }
    if (k <= c.var_freeze_step || frozen) return false;
    frozen = true;
    reduce_next = false;
    return true;
  }
};

class OneBitAdamOptimizer final : public ShardOptimizer {
 public:
  explicit OneBitAdamOptimizer(const OptimizerContext& ctx)
      : ctx_(ctx),
        dev_(ctx.device),
        ranks_(ctx.layout.world_size()),
        m_(dev_.alloc(Tier::kDevice, Category::kOptimizerState, ctx.state_numel, "Adam first moment")),
        v_(dev_.alloc(Tier::kDevice, Category::kOptimizerState, ctx.state_numel, "Adam second moment")),
        grads_(ctx.layout.num_units()) {
    ZERO_CHECK(!ctx.sheds_gradients && !ctx.offload.optimizer && ctx.comm, "1-bit Adam outside stage 0: the settings were not checked");
    if (ctx.dtype != Dtype::kF32) {  // counter-based init: the master holds what the 16-bit copy rounds
      master_ = dev_.alloc(Tier::kDevice, master_category(ctx.dtype), ctx.state_numel, "fp32 master parameters");
      for (const OptimizerPart& p : ctx_.parts) dev_.init(dev_.compute(), ctx.layout.unit(p.unit), p.segments, ctx.seed, slot(master_, p));
    }
    std::vector<std::size_t> sizes;
    std::size_t worker = 0;
    for (const OptimizerPart& p : ctx_.parts) {
      sizes.push_back(p.params.size());
      worker += CompressedAllReduce::padded_size(p.params.size(), ranks_);
    }
    if (zero_one()) {
      u_ = dev_.alloc(Tier::kDevice, Category::kOptimizerState, ctx.state_numel, "0/1 Adam accumulated update");
      sync_ = dev_.alloc(Tier::kDevice, Category::kOptimizerState, ctx.state_numel, "0/1 Adam parameters at the last synchronisation");
    }
    if (ranks_ == 1) return;  // one rank: the compressed steps have nothing to average
    worker_error_ = dev_.alloc(Tier::kDevice, Category::kOptimizerState, worker, "1-bit Adam worker error");
    server_error_ = dev_.alloc(Tier::kDevice, Category::kOptimizerState, worker / static_cast<std::size_t>(ranks_), "1-bit Adam server error");
    if (dev_.computes()) reducer_ = std::make_unique<CompressedAllReduce>(*ctx.comm, sizes);
  }

  void begin_micro_batch(bool first, bool boundary) override {
    // The planner's dry run (a device that does not compute) plans the warm-up's steps.
    if (first) {
      const bool onebit_local = applied_ >= std::max<std::int64_t>(ctx_.onebit.freeze_step, 1);
      local_ = (zero_one() ? !schedule_.reduce_next : onebit_local) && dev_.computes();
    }
    micro_batches_ = first ? 1 : micro_batches_ + 1;
    boundary_ = boundary;
  }
  bool local_gradients() const override { return local_; }
  Traffic own_traffic() const override { return reducer_ ? reducer_->pair_traffic() : Traffic{}; }

  DeviceSpan reduce_target(int) override {
    ZERO_CHECK(false, "1-bit Adam with a stage that sheds its gradients");
    return {};
  }

  // Summed over the ranks in the warm-up (the average divides by N); the rank's own after it.
  void reduced(int u, const DeviceSpan& region, const Handle& done) override {
    grads_[u] = region;
    const int ranks = local_ ? 1 : ranks_;
    const double predivide = local_ ? 1.0 : ctx_.predivide;  // only a reduction predivides
    pending_.push_back({done, u, boundary_ ? gradient_divisor(ranks, micro_batches_, predivide) : 1.0f});
  }

  void finish() override {
    while (!pending_.empty()) {
      const Pending p = pending_.front();
      pending_.pop_front();
      p.done.wait();
      if (p.divisor != 1.0f) dev_.divide(dev_.compute(), grads_[p.unit], p.divisor);
    }
  }

  // A reduced gradient is the same on every rank, so each sums its norm slice; a local one is
  // summed whole, the rank's own norm.
  double sum_squares() override {
    double acc = 0.0;
    for (const OptimizerPart& p : ctx_.parts) acc = dev_.sum_squares(dev_.compute(), checked(p), acc);
    return acc;
  }
  void scale(float c) override {
    for (const OptimizerPart& p : ctx_.parts) dev_.scale(dev_.compute(), grads_[p.unit], c);
  }
  bool nonfinite() override {
    bool any = false;
    for (const OptimizerPart& p : ctx_.parts) any = dev_.nonfinite(dev_.compute(), checked(p)) || any;
    return any;
  }

  void prepare(const AdamStep&) override {}

  void step(const AdamStep& s) override {
    if (++applied_ == 1) return;  // DeepSpeed's initialisation step
    if (zero_one() && dev_.computes()) return zero_one_step(s);
    if (!local_) {
      for (const OptimizerPart& p : ctx_.parts) {
        dev_.adam(dev_.compute(), s, p.segments, masters(p), grads_[p.unit], slot(m_, p), slot(v_, p), master_.empty() ? DeviceSpan() : p.params);
      }
      return;
    }
    dev_.compute().synchronize();
    std::vector<std::span<float>> moments;
    for (const OptimizerPart& p : ctx_.parts) {
      float* m = host(slot(m_, p));
      const void* g = dev_.transport(grads_[p.unit]);
      const Dtype dtype = grads_[p.unit].dtype();
      for (std::size_t i = 0; i < p.params.size(); ++i) m[i] = std::fma(s.beta1, m[i], s.one_minus_beta1 * widen(dtype, g, i));
      moments.emplace_back(m, p.params.size());
    }
    average(moments);
    for (const OptimizerPart& p : ctx_.parts) update_frozen(s, p);
  }

  void lamb_moments(const LambStep&, std::vector<LambNorms>&) override { ZERO_CHECK(false, "Lamb phases on 1-bit Adam"); }
  void lamb_update(const LambStep&, const std::vector<float>&) override { ZERO_CHECK(false, "Lamb phases on 1-bit Adam"); }

  DeviceSpan state(int u, StateTensor tensor) override {
    const OptimizerPart& p = ctx_.parts.at(u);
    return adam_state(p, tensor, masters(p), m_, v_);
  }
  void state_written(std::int64_t, bool in_flight) override {
    ZERO_CHECK(!in_flight, "an update in flight without the delayed update");
    for (const OptimizerPart& p : ctx_.parts)
      if (!master_.empty()) dev_.convert(dev_.compute(), p.params, slot(master_, p));  // rounded as the step rounds them
    if (!worker_error_.empty()) {
      dev_.fill(dev_.compute(), worker_error_.span(), 0.0f);
      dev_.fill(dev_.compute(), server_error_.span(), 0.0f);
    }
  }
  // 0/1 Adam restarts its intervals (DeepSpeed drops them with the errors at a load too).
  void set_steps_applied(std::int64_t applied) override {
    applied_ = applied;
    schedule_ = {};
    schedule_.frozen = applied > ctx_.zero_one.var_freeze_step;
    schedule_.reduce_next = !schedule_.frozen;
    lrs_ = 0.0;
    if (!u_.empty()) dev_.fill(dev_.compute(), u_.span(), 0.0f);
    if (zero_one()) keep_sync_point();  // the loaded parameters, the same on every rank
  }

 private:
  struct Pending {
    Handle done;
    int unit;
    float divisor;  // at the step's last micro-batch; 1 before it
  };

  bool zero_one() const { return ctx_.kind == OptimizerKind::kZeroOneAdam; }
  std::span<float> whole(const DeviceBuffer& b) { return {host(b.span()), b.size()}; }
  // The compressed average of `tensors` (one per part), in place; nothing on one rank.
  void average(const std::vector<std::span<float>>& tensors) {
    if (reducer_) reducer_->run(tensors, whole(worker_error_), whole(server_error_));
  }
  std::vector<std::span<float>> part_spans(const DeviceBuffer& b) {
    std::vector<std::span<float>> out;
    for (const OptimizerPart& p : ctx_.parts) out.emplace_back(host(slot(b, p)), p.params.size());
    return out;
  }
  // Calls f(i, decay) for each parameter element i of the part (padding skipped).
  template <typename F>
  static void each_parameter(const OptimizerPart& part, F f) {
    for (const Segment& seg : part.segments)
      if (seg.param >= 0)
        for (std::size_t i = seg.offset; i < seg.offset + seg.numel; ++i) f(i, seg.decay);
  }
  void round_copy(const OptimizerPart& part, std::size_t i) {
    if (!master_.empty()) narrow(part.params.dtype(), host(masters(part))[i], dev_.transport(part.params), i);
  }

  float* host(const DeviceSpan& s) { return static_cast<float*>(dev_.transport(s)); }
  // The f32 parameters the update writes: the part's own in f32, its masters in mixed precision.
  DeviceSpan masters(const OptimizerPart& p) const { return master_.empty() ? p.params : slot(master_, p); }
  static void narrow(Dtype dtype, float x, void* out, std::size_t i) {
    static_cast<std::uint16_t*>(out)[i] = dtype == Dtype::kBf16 ? float_to_bf16(x) : float_to_fp16(x);
  }
  static float widen(Dtype dtype, const void* x, std::size_t i) {
    switch (dtype) {
      case Dtype::kF32: return static_cast<const float*>(x)[i];
      case Dtype::kBf16: return bf16_to_float(static_cast<const std::uint16_t*>(x)[i]);
      default: return fp16_to_float(static_cast<const std::uint16_t*>(x)[i]);
    }
  }
  DeviceSpan checked(const OptimizerPart& p) const {
    return local_ ? grads_[p.unit] : grads_[p.unit].sub(p.norm_begin, p.norm_numel);
  }

  // The update with the averaged momentum and the frozen v, over the parameters (padding skipped),
  // in the order of the Adam kernel's last lines (adamw.h).
  void update_frozen(const AdamStep& s, const OptimizerPart& part) {
    float* p = host(masters(part));
    void* copy = master_.empty() ? nullptr : dev_.transport(part.params);  // 16-bit parameters, rounded from p
    const float* m = host(slot(m_, part));
    const float* v = host(slot(v_, part));
    for (const Segment& seg : part.segments) {
      if (seg.param < 0) continue;
      const bool decay = seg.decay && s.decoupled;
      for (std::size_t i = seg.offset; i < seg.offset + seg.numel; ++i) {
        const float denom = std::fma(std::sqrt(v[i]), s.inv_sqrt_bc2, s.eps);
        const float pi = decay ? p[i] * s.decay_factor : p[i];
        p[i] = std::fma(-s.step_size, m[i] / denom, pi);
        if (copy) narrow(part.params.dtype(), p[i], copy, i);
      }
    }
  }

  // 0/1 Adam's step k >= 2 (see the top of this file), on the CPU.
  void zero_one_step(const AdamStep& s) {
    dev_.compute().synchronize();
    const bool frozen = schedule_.frozen, compressed = local_ && !frozen;
    if (compressed) {  // the local gradients, widened into u_ (zero in this phase), averaged compressed
      for (const OptimizerPart& p : ctx_.parts) {
        float* g1 = host(slot(u_, p));
        const void* g = dev_.transport(grads_[p.unit]);
        for (std::size_t i = 0; i < p.params.size(); ++i) g1[i] = widen(grads_[p.unit].dtype(), g, i);
      }
      average(part_spans(u_));
    }
    if (frozen) lrs_ += s.lr;
    for (const OptimizerPart& p : ctx_.parts) {
      float *m = host(slot(m_, p)), *v = host(slot(v_, p)), *u = host(slot(u_, p)), *w = host(masters(p));
      const void* g = dev_.transport(grads_[p.unit]);
      for (std::size_t i = 0; i < p.params.size(); ++i) {
        const float gi = compressed ? u[i] : widen(grads_[p.unit].dtype(), g, i);
        if (!frozen && !local_) v[i] = std::fma(s.beta2, v[i], (s.one_minus_beta2 * gi) * gi);
        m[i] = std::fma(s.beta1, m[i], s.one_minus_beta1 * gi);
        if (compressed) u[i] = 0.0f;
      }
      each_parameter(p, [&](std::size_t i, bool decay) {  // DeepSpeed's update: p -= lr (m / (sqrt(v) + eps) + wd p)
        const float update = m[i] / (std::sqrt(v[i]) + s.eps) + (decay ? s.weight_decay * w[i] : 0.0f);
        w[i] = w[i] - s.lr * update;
        if (frozen) u[i] = u[i] - s.lr * update;
        round_copy(p, i);
      });
    }
    if (frozen && applied_ % schedule_.local_interval == 0) synchronise(s.eps);
    if (schedule_.advance(ctx_.zero_one, applied_)) {  // frozen now: every rank holds the same parameters
      keep_sync_point();
      if (!worker_error_.empty()) {  // the errors will feed back u
        dev_.fill(dev_.compute(), worker_error_.span(), 0.0f);
        dev_.fill(dev_.compute(), server_error_.span(), 0.0f);
      }
    }
  }

  void keep_sync_point() {
    for (const OptimizerPart& p : ctx_.parts) dev_.copy(dev_.compute(), slot(sync_, p), masters(p));
  }

  // 0/1 Adam after the freeze: the local steps since the last synchronisation are undone and
  // replaced by the compressed average of every rank's, rescaled by the frozen variance.
  void synchronise(float eps) {
    for (const OptimizerPart& p : ctx_.parts) {
      float *v = host(slot(v_, p)), *u = host(slot(u_, p));
      for (std::size_t i = 0; i < p.params.size(); ++i) u[i] = u[i] * (std::sqrt(v[i]) + eps);
    }
    average(part_spans(u_));
    const float lrs = static_cast<float>(lrs_);
    for (const OptimizerPart& p : ctx_.parts) {
      float *m = host(slot(m_, p)), *v = host(slot(v_, p)), *u = host(slot(u_, p)), *w = host(masters(p)), *ws = host(slot(sync_, p));
      for (std::size_t i = 0; i < p.params.size(); ++i) m[i] = -(u[i] / lrs);
      each_parameter(p, [&](std::size_t i, bool) {
        w[i] = ws[i] + u[i] / (std::sqrt(v[i]) + eps);
        ws[i] = w[i];
        round_copy(p, i);
      });
      std::fill(u, u + p.params.size(), 0.0f);
    }
    lrs_ = 0.0;
  }

  OptimizerContext ctx_;
  Device& dev_;
  int ranks_;
  DeviceBuffer m_, v_;                 // (state_numel) f32, device tier, optimizer state
  DeviceBuffer master_;                // (state_numel) f32, device tier, optimizer state: mixed precision only
  DeviceBuffer worker_error_;          // (sum of C_u) f32, device tier, optimizer state: N > 1 only
  DeviceBuffer server_error_;          // (sum of C_u / N) f32, device tier, optimizer state: N > 1 only
  std::unique_ptr<CompressedAllReduce> reducer_;  // N > 1, on a computing device
  std::vector<DeviceSpan> grads_;      // (num_units) the stage's gradients
  std::deque<Pending> pending_;
  DeviceBuffer u_;                     // (state_numel) f32, device tier, optimizer state: 0/1 Adam's u (and its gradient scratch)
  DeviceBuffer sync_;                  // (state_numel) f32, device tier, optimizer state: 0/1 Adam's p_sync
  std::int64_t applied_ = 0;           // optimizer steps applied
  bool local_ = false;                 // this step's gradients are each rank's own
  ZeroOneSchedule schedule_;           // 0/1 Adam
  double lrs_ = 0.0;                   // 0/1 Adam: learning rates summed since the last synchronisation
  int micro_batches_ = 0;
  bool boundary_ = true;
};

}  // namespace

std::unique_ptr<ShardOptimizer> make_onebit_optimizer(const OptimizerContext& ctx) { return std::make_unique<OneBitAdamOptimizer>(ctx); }

}  // namespace zero
