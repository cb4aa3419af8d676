// ZenFlow (zenflow.h) with the CPU's state on the NVMe tier: the device side is host ZenFlow's
// (zenflow_columns.h); the CPU's f32 masters and Adam moments live in the rank's swap file as
// plain NVMe offload keeps them, and so does the gradient ZenFlow sums between its CPU updates
// (optimizer-state-sized), each streamed through nvme_stream.h's bounded host buffers. Host
// memory holds the step's gradient shard and the buffers. DeepSpeed's stages 1 and 2 refuse
// ZenFlow with offload_optimizer "nvme" ("Zenflow must be used with cpu offload"); this is zero's own.
//
// In the file, a sub-group has two stretches: [master | m | v] and its accumulated gradient
// (only when update_interval > 1: otherwise nothing is summed). The steps:
//   warm-up      plain NVMe offload: each sub-group read, Adam with the step's gradient, the
//                parameters take the masters, written back;
//   between      the device's step; each sub-group's accumulated gradient read (not at the
//   updates      interval's first step), the step's gradient added, written back;
//   CPU update   the device's step; each sub-group's state (and sum) read, the sum completed
//                and divided as host ZenFlow divides it, then, in host ZenFlow's order, the
//                masters of the device's columns take the device's values, Adam runs, and the
//                parameters take the masters (temp_copy_param); the state written back.
// Every element sees the operations host ZenFlow makes, in its order, so the weights are the
// same bit for bit, in bf16 and fp16 too (the sum f32, the masters rounded into the parameters:
// optimizer_zenflow.cpp's mixed precision; a lone 16-bit gradient goes to Adam widened, as host
// ZenFlow's exact widening into its f32 sum gives it).
//
// overlap_step keeps its meaning (the CPU's result reaches the parameters one interval late, at
// the next update or synchronize()), but not its overlap: the CPU's pass through the disk runs
// within the update's step (the pass that applies the last result computes the next).
#include "common/error.h"
#include "engine/disk_bytes.h"
#include "engine/nvme_stream.h"
#include "engine/optimizer_host_gradients.h"
#include "engine/zenflow.h"
#include "engine/zenflow_columns.h"

namespace zero {
namespace {

// The stretches, as bits for NvmeStream::run.
constexpr unsigned kState = 1u, kSum = 2u;

class ZenflowNvmeOptimizer final : public HostGradientOptimizer {
 public:
  explicit ZenflowNvmeOptimizer(const OptimizerContext& ctx)
      : HostGradientOptimizer(ctx, 1), z_(ctx.offload.zenflow), cols_(ctx_),
        stream_(ctx.parts, ctx.offload.nvme, sums() ? std::vector<std::size_t>{3, 1} : std::vector<std::size_t>{3}),
        masters_(dev_.ledger(), master_category(ctx.dtype), ctx.state_numel * sizeof(float), "fp32 master parameter shard (swap file)"),
        moments_(dev_.ledger(), Category::kOptimizerState, 2 * ctx.state_numel * sizeof(float), "Adam's moments (swap file)") {
    if (sums()) sum_.emplace(dev_.ledger(), Category::kGradients, ctx.state_numel * sizeof(float), "ZenFlow's accumulated gradient (swap file)");
    slots_.resize(stream_.slot_count());
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      slots_[i].state = host_buffer(Category::kOptimizerState, 3 * stream_.largest(), "NVMe swap buffer (a sub-group's masters and moments)", Dtype::kF32);
      stream_.set_buffer(i, 0, slots_[i].state.span(), dev_);
      if (!sums()) continue;
      slots_[i].sum = host_buffer(Category::kGradients, stream_.largest(), "NVMe swap buffer (a sub-group's accumulated gradient)", Dtype::kF32);
      stream_.set_buffer(i, 1, slots_[i].sum.span(), dev_);
    }
    grads_[0] = host_buffer(Category::kGradients, ctx.state_numel, "gradient shard", ctx.dtype);
    if (!dev_.computes()) return;  // the planner's dry run: counted, not written
    stream_.open(ctx.offload.nvme.path, ctx.rank, "optimizer.swap");
    stream_.initialise(dev_, ctx_, traffic_);
  }

  ~ZenflowNvmeOptimizer() override { quiet_sync(dev_.host()); }  // the host stream may still read the slots

  void gradient_landed(const OptimizerPart&, const Handle&) override {}  // everything waits for the step
  void prepare(const AdamStep&) override {}

  void step(const AdamStep& s) override {
    drop_staging();
    const std::int64_t t = cols_.steps();
    if (!cols_.step(s, grads_[0], [&] { ++summed_; })) return warm_up_step(s);
    if (zenflow::is_update_step(z_, t)) cpu_update(s);
    else accumulate();
  }

  DiskTraffic disk_traffic() const override { return traffic_; }

  void lamb_moments(const LambStep&, std::vector<LambNorms>&) override { ZERO_CHECK(false, "Lamb with ZenFlow"); }
  void lamb_update(const LambStep&, const std::vector<float>&) override { ZERO_CHECK(false, "Lamb with ZenFlow"); }

  // Checkpoints: the device's tensors are host ZenFlow's; the file's, a part of one tensor read
  // into the staging buffer (kept while the same part and tensor are asked for again, until the
  // next step) and written back when changed. The sum is zeros while nothing is summed (with
  // update_interval 1 it never is, and the file has no place for it).
  DeviceSpan state(int u, StateTensor tensor) override {
    const OptimizerPart& p = ctx_.parts.at(u);
    if (tensor == StateTensor::kParamsInUse) return p.params;
    if (tensor > StateTensor::kZenflowGradSum) return cols_.state(u, tensor);
    if (part_staging_.empty()) part_staging_ = dev_.alloc(Tier::kHost, Category::kOther, largest_part(), "NVMe state staging (one part)");
    const DeviceSpan span = part_staging_.sub(0, p.params.size());
    if (staged(u, tensor) || !stream_.file()) return span;
    if (tensor != StateTensor::kZenflowGradSum || summed_ > 0) {  // the file's sum is written at an interval's first step
      transfer(u, tensor, false);
    } else {
      dev_.fill(dev_.host(), span, 0.0f);
      dev_.host().synchronize();
    }
    staged_ = {u, tensor};
    return span;
  }
  void state_changed(int u, StateTensor tensor) override {
    if (tensor > StateTensor::kZenflowGradSum) return cols_.state_changed(u, tensor);
    if (tensor == StateTensor::kParamsInUse) return;  // written in place
    ZERO_CHECK(staged(u, tensor), "state written to a part that is not staged");
    if (stream_.file() && (tensor != StateTensor::kZenflowGradSum || sums())) transfer(u, tensor, true);
  }

  std::optional<ZenflowCounters> zenflow_counters() const override { return ZenflowCounters{summed_, in_flight_}; }
  void restore_zenflow(const std::optional<ZenflowCounters>& c) override { restored_ = c; }

  // The parameters take the loaded masters unless they were written themselves (ZenFlow's
  // checkpoint); a result in flight lands at the next update, as it would have.
  void state_written(std::int64_t steps_done, bool params_written) override {
    ZERO_CHECK(!restored_ || !restored_->in_flight || z_.overlap_step, "a ZenFlow update in flight without overlap_step");
    drop_staging();
    if (!params_written) {
      stream_.run(dev_, kState, 0u, [&](const SubGroup& g, std::size_t i) { dev_.copy(dev_.host(), params(g), tensor(i, g, 0)); }, traffic_);
    }
    summed_ = restored_ ? restored_->summed : 0;
    in_flight_ = restored_ && restored_->in_flight;
    cols_.restore(steps_done, !restored_);
  }

  // The CPU's last result (overlap_step) reaches the parameters now rather than at the next update.
  bool synchronize() override {
    if (!in_flight_) return false;
    // Written back: take() put the device's columns into the masters, as host ZenFlow's master_
    // keeps them for the next CPU update.
    stream_.run(dev_, kState, kState, [&](const SubGroup& g, std::size_t i) { merge(g, i); }, traffic_);
    in_flight_ = false;
    return true;
  }

 private:
  struct Slot {
    DeviceBuffer state;  // (3 * largest sub-group) f32, host tier: [master | m | v] of the sub-group in it
    DeviceBuffer sum;    // (largest sub-group) f32, host tier: its accumulated gradient (update_interval > 1)
  };

  // Whether steps between CPU updates sum their gradients (else the sum is the update's own).
  bool sums() const { return ctx_.offload.zenflow.update_interval > 1; }
  DeviceSpan tensor(std::size_t slot, const SubGroup& g, std::size_t t) const { return stream_.tensor(slot, g, 0, t); }
  DeviceSpan params(const SubGroup& g) const { return ctx_.parts[g.part].params.sub(g.begin, g.numel); }
  DeviceSpan gradient(const SubGroup& g) const { return grad(0, ctx_.parts[g.part]).sub(g.begin, g.numel); }

  // Plain NVMe offload: the CPU's Adam over every element, the parameters copied back.
  void warm_up_step(const AdamStep& s) {
    stream_.run(dev_, kState, kState, [&](const SubGroup& g, std::size_t i) {
      dev_.adam(dev_.host(), s, g.segments, tensor(i, g, 0), gradient(g), tensor(i, g, 1), tensor(i, g, 2), {});
      params_from_masters(dev_.host(), params(g), tensor(i, g, 0));
    }, traffic_);
  }

  // The step's gradient into the sum of the interval's (the first: the sum is not read).
  void accumulate() {
    stream_.run(dev_, summed_ > 1 ? kSum : 0u, kSum, [&](const SubGroup& g, std::size_t i) {
      const DeviceSpan sum = stream_.tensor(i, g, 1, 0);
      if (summed_ > 1) dev_.add(dev_.host(), sum, gradient(g));  // mixed precision: widened, summed in f32
      else if (mixed()) dev_.convert(dev_.host(), sum, gradient(g));
      else dev_.copy(dev_.host(), sum, gradient(g));
    }, traffic_);
  }

  // The CPU's Adam over every element with the mean of the interval's gradients, and its result
  // to the parameters (overlap_step: the last interval's, before this one's Adam).
  void cpu_update(const AdamStep& s) {
    const bool overlap = z_.overlap_step, landed = overlap && in_flight_;
    stream_.run(dev_, kState | (summed_ > 1 ? kSum : 0u), kState, [&](const SubGroup& g, std::size_t i) {
      DeviceSpan mean = gradient(g);
      if (summed_ > 1) {
        const DeviceSpan sum = stream_.tensor(i, g, 1, 0);
        dev_.add(dev_.host(), sum, mean);
        dev_.divide(dev_.host(), sum, static_cast<float>(summed_));
        mean = sum;
      }
      if (overlap) merge(g, i, landed);
      dev_.adam(dev_.host(), s, g.segments, tensor(i, g, 0), mean, tensor(i, g, 1), tensor(i, g, 2), {});
      if (!overlap) merge(g, i);
    }, traffic_);
    summed_ = 0;
    in_flight_ = overlap;
  }

  // Tensor `tensor` (master, m, v: stretch 0; the sum: stretch 1) of part u, file <-> staging.
  void transfer(int u, StateTensor tensor, bool to_file) {
    const bool sum = tensor == StateTensor::kZenflowGradSum;
    stream_.transfer_part(dev_, u, sum ? 1 : 0, sum ? 0 : static_cast<std::size_t>(tensor), part_staging_.span(), to_file, traffic_);
  }

  bool staged(int u, StateTensor tensor) const { return staged_ && staged_->first == u && staged_->second == tensor; }

  void drop_staging() {
    part_staging_.reset();
    staged_.reset();
  }

  // The masters of the device's columns take its values and, if `apply`, the parameters take
  // the masters (host ZenFlow's merge, a sub-group at a time).
  void merge(const SubGroup& g, std::size_t i, bool apply = true) {
    cols_.take(dev_.host(), g.part, g.begin, tensor(i, g, 0));
    if (apply) params_from_masters(dev_.host(), params(g), tensor(i, g, 0));
  }

  ZenflowOptions z_;
  ZenflowColumns cols_;           // the device's side: the selected columns, their moments (device tier)
  std::vector<Slot> slots_;       // before the stream: the file's requests point into them
  NvmeStream stream_;             // the sub-groups, and the swap file: per sub-group [master | m | v], [sum], f32, nvme tier
  DiskBytes masters_, moments_;   // nvme tier: the swap file's (state_numel) f32 masters, and m and v
  std::optional<DiskBytes> sum_;  // nvme tier: its (state_numel) f32 accumulated gradient
  DiskTraffic traffic_;           // bytes the steps moved to and from the file
  int summed_ = 0;                // steps whose gradients the interval's sum holds
  bool in_flight_ = false;        // overlap_step: a CPU result in the masters, not yet in the parameters
  DeviceBuffer part_staging_;          // (largest part) f32, host tier, other: one part of one tensor, for checkpoints
  std::optional<std::pair<int, StateTensor>> staged_;
  std::optional<ZenflowCounters> restored_;  // a checkpoint's, being loaded
};

}  // namespace

std::unique_ptr<ShardOptimizer> make_zenflow_nvme_optimizer(const OptimizerContext& ctx) { return std::make_unique<ZenflowNvmeOptimizer>(ctx); }

}  // namespace zero
