// The optimizer on the NVMe tier (ZeRO-Infinity's optimizer offload to disk): the fp32 masters
// and Adam's moments live in one swap file per rank (io/: a folder of the rank's own under
// nvme_path, removed at the end); the reduced gradients stay in host memory
// (optimizer_host_gradients.h); Adam runs on the CPU at the step, over the state streamed through
// a few host buffers.
//
// The sub-groups, slots and pipeline are nvme_stream.h's: in the file a sub-group is one stretch,
// [master | m | v] (f32 each), one read and one write; a slot also holds, in mixed precision, the
// sub-group's 16-bit parameters bound for the device. Adam is the CPU Adam of host offload (Device::adam on the host stream) over the same elements, with the
// same gradients and scalars, so the weights are bit-identical to host offload and to no offload.
//
// Checkpoints read and write the state one part at a time through a staging buffer of the
// largest part (state(), state_changed()); the whole state is never in host memory at once.
//
// In the planner's dry run (a device that does not compute) nothing touches a disk: the
// swap file's bytes are only counted in the ledger's nvme tier.
#include "common/error.h"
#include "engine/disk_bytes.h"
#include "engine/nvme_stream.h"
#include "engine/optimizer_host_gradients.h"

namespace zero {
namespace {

// The state tensors in a sub-group's one stretch of the file, in this order.
constexpr std::size_t kTensors = 3;  // master, m, v
std::size_t tensor_index(StateTensor t) { return t == StateTensor::kMaster ? 0 : t == StateTensor::kExpAvg ? 1 : 2; }

class NvmeOptimizer final : public HostGradientOptimizer {
 public:
  explicit NvmeOptimizer(const OptimizerContext& ctx)
      : HostGradientOptimizer(ctx, 1), stream_(ctx.parts, ctx.offload.nvme, {kTensors}),
        masters_(dev_.ledger(), master_category(ctx.dtype), ctx.state_numel * sizeof(float), "fp32 master parameter shard (swap file)"),
        moments_(dev_.ledger(), Category::kOptimizerState, 2 * ctx.state_numel * sizeof(float), "Adam's moments (swap file)") {
    slots_.resize(stream_.slot_count());
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      s.state = host_buffer(Category::kOptimizerState, kTensors * stream_.largest(), "NVMe swap buffer (a sub-group's masters and moments)", Dtype::kF32);
      if (mixed()) s.copy = host_buffer(Category::kParameters, stream_.largest(), "16-bit parameters of a sub-group", ctx.dtype);
      stream_.set_buffer(i, 0, s.state.span(), dev_);
    }
    grads_[0] = host_buffer(Category::kGradients, ctx.state_numel, "gradient shard", ctx.dtype);
    if (!dev_.computes()) return;  // the planner's dry run: counted, not written
    stream_.open(ctx.offload.nvme.path, ctx.rank, "optimizer.swap");
    stream_.initialise(dev_, ctx_, traffic_);
  }

  ~NvmeOptimizer() override { quiet_sync(dev_.host()); }  // Adam in flight reads the slots

  void gradient_landed(const OptimizerPart&, const Handle&) override {}  // Adam waits for the step
  void prepare(const AdamStep&) override {}

  void step(const AdamStep& s) override {
    drop_staging();
    stream(true, true, [&](const SubGroup& g, const Slot& slot) {
      const OptimizerPart& p = ctx_.parts[g.part];
      const DeviceSpan master = slot_tensor(slot, g, 0);
      const DeviceSpan fused = fused_copy(slot, g);
      dev_.adam(dev_.host(), s, g.segments, master, grad(0, p).sub(g.begin, g.numel), slot_tensor(slot, g, 1), slot_tensor(slot, g, 2),
                fused);
      copy_out(g, master, fused);
    });
  }

  DiskTraffic disk_traffic() const override { return traffic_; }

  void lamb_moments(const LambStep&, std::vector<LambNorms>&) override { refuse_lamb(); }
  void lamb_update(const LambStep&, const std::vector<float>&) override { refuse_lamb(); }

  // A part of one tensor, read from the file into the staging buffer (kept while the same part
  // and tensor are asked for again, until the next step).
  DeviceSpan state(int u, StateTensor tensor) override {
    const OptimizerPart& p = ctx_.parts.at(u);
    if (tensor == StateTensor::kParamsInUse) return p.params;
    if (staging_.empty()) staging_ = dev_.alloc(Tier::kHost, Category::kOther, largest_part(), "NVMe state staging (one part)", Dtype::kF32, false);
    const DeviceSpan span = staging_.sub(0, p.params.size());
    if (staged(u, tensor) || !stream_.file()) return span;
    transfer_part(u, tensor, false);
    staged_ = {u, tensor};
    return span;
  }

  void state_changed(int u, StateTensor tensor) override {
    ZERO_CHECK(staged(u, tensor), "state written to a part that is not staged");
    if (stream_.file()) transfer_part(u, tensor, true);
  }

  // The parameters the stage holds, from the loaded masters: rounded as Adam's fused copy rounds.
  void state_written(std::int64_t, bool in_flight) override {
    ZERO_CHECK(!in_flight, "an update in flight on the NVMe tier");
    drop_staging();
    stream(true, false, [&](const SubGroup& g, const Slot& slot) {
      const DeviceSpan master = slot_tensor(slot, g, 0);
      const DeviceSpan fused = fused_copy(slot, g);
      if (mixed()) dev_.convert(dev_.host(), fused, master);
      copy_out(g, master, fused);
    });
  }

 private:
  struct Slot {
    DeviceBuffer state;  // (3 * largest sub-group) f32, host tier: [master | m | v] of the sub-group in it
    DeviceBuffer copy;   // (largest sub-group) compute dtype, host tier: mixed precision, its 16-bit parameters
  };
  using Work = std::function<void(const SubGroup&, Slot&)>;

  [[noreturn]] static void refuse_lamb() {
    throw ConfigError("[engine] Lamb with offload_optimizer.device \"nvme\" is not supported yet: use Adam/AdamW, or device \"cpu\"");
  }

  DeviceSpan slot_tensor(const Slot& s, const SubGroup& g, std::size_t t) const { return s.state.sub(t * g.numel, g.numel); }

  // Mixed precision: where Adam writes the sub-group's 16-bit parameters (the host-tier shard
  // itself with offload_param, else the slot's copy bound for the device); empty in f32.
  DeviceSpan fused_copy(const Slot& s, const SubGroup& g) const {
    if (!mixed()) return {};
    const OptimizerPart& p = ctx_.parts[g.part];
    return on_device(p) ? s.copy.sub(0, g.numel) : p.params.sub(g.begin, g.numel);
  }

  // On the host stream: the updated parameters to where the stage holds them (with the stage's
  // shard on the NVMe tier, through its window to its swap file, before the next sub-group).
  void copy_out(const SubGroup& g, const DeviceSpan& master, const DeviceSpan& fused) {
    const OptimizerPart& p = ctx_.parts[g.part];
    const DeviceSpan params = p.params.sub(g.begin, g.numel);
    if (on_device(p)) dev_.copy(dev_.host(), params, mixed() ? fused : master);
    else if (!mixed()) dev_.copy(dev_.host(), params, master);
    if (!on_device(p) && ctx_.param_sink) {  // offload_param "nvme": params is the stage's window, bound for its swap file
      dev_.host().synchronize();
      ctx_.param_sink->written(p.unit, g.begin, params);
    }
  }

  // Every sub-group in order through the slots (nvme_stream.h): read it (if `read`), run
  // `work` on the host stream, write it back (if `write`).
  void stream(bool read, bool write, const Work& work) {
    stream_.run(dev_, read ? 1u : 0u, write ? 1u : 0u, [&](const SubGroup& g, std::size_t i) { work(g, slots_[i]); }, traffic_);
  }

  // One tensor of part u between the file and the staging buffer, a sub-group at a time.
  void transfer_part(int u, StateTensor tensor, bool to_file) {
    stream_.transfer_part(dev_, u, 0, tensor_index(tensor), staging_.span(), to_file, traffic_);
  }

  bool staged(int u, StateTensor tensor) const { return staged_ && staged_->first == u && staged_->second == tensor; }

  void drop_staging() {
    staging_.reset();
    staged_.reset();
  }

  std::vector<Slot> slots_;               // before the stream: the file's requests point into them
  NvmeStream stream_;                     // the sub-groups, and the swap file: (sub-groups) [master | m | v] f32 each, nvme tier
  DiskBytes masters_, moments_;           // nvme tier: the swap file's (state_numel) f32 masters, and m and v
  DeviceBuffer staging_;                  // (largest part) f32, host tier, other: one part of one tensor, for checkpoints
  std::optional<std::pair<int, StateTensor>> staged_;
  DiskTraffic traffic_;                   // bytes the steps (and checkpoints) moved to and from the file
};

}  // namespace

std::unique_ptr<ShardOptimizer> make_nvme_optimizer(const OptimizerContext& ctx) { return std::make_unique<NvmeOptimizer>(ctx); }

}  // namespace zero
