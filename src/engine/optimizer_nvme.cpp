// The optimizer on the NVMe tier (ZeRO-Infinity's optimizer offload to disk): the fp32 masters
// and Adam's moments live in one swap file per rank (io/: a folder of the rank's own under
// nvme_path, removed at the end); the reduced gradients stay in host memory
// (optimizer_host_gradients.h); Adam runs on the CPU at the step, over the state streamed through
// a few host buffers.
//
// Words:
//   sub-group  at most sub_group_size elements of one part: what one swap-in holds. In the file a
//              sub-group is [master | m | v] (f32 each), one read and one write, starting at a
//              multiple of the I/O alignment (O_DIRECT).
//   slot       one of buffer_count host buffers, each the size of the largest sub-group (and, in
//              mixed precision, its 16-bit parameters bound for the device).
//
// The pipeline (the paper's overlap of disk and CPU): while Adam updates sub-group i in its slot,
// the reads of the next sub-groups and the write of sub-group i-1 are in flight. Adam is the
// CPU Adam of host offload (Device::adam on the host stream) over the same elements, with the
// same gradients and scalars, so the weights are bit-identical to host offload and to no offload.
//
// Checkpoints read and write the state one part at a time through a staging buffer of the
// largest part (state(), state_changed()); the whole state is never in host memory at once.
//
// In the planner's dry run (a device that does not compute) nothing touches a disk: the
// swap file's bytes are only counted in the ledger's nvme tier.
#include <sys/statvfs.h>

#include <functional>
#include <optional>

#include "common/error.h"
#include "engine/disk_bytes.h"
#include "engine/optimizer_host_gradients.h"
#include "io/async_file.h"
#include "io/swap_folder.h"

namespace zero {
namespace {

// The state tensors in a sub-group's stretch of the file, in this order.
constexpr std::size_t kTensors = 3;  // master, m, v
std::size_t tensor_index(StateTensor t) { return t == StateTensor::kMaster ? 0 : t == StateTensor::kExpAvg ? 1 : 2; }

struct SubGroup {
  int part = 0;               // index in the context's parts
  std::size_t begin = 0;      // first element in the part
  std::size_t numel = 0;
  std::uint64_t file_offset = 0;
  std::vector<Segment> segments;  // of the part's, cut to [begin, begin + numel) and made relative to begin
  std::uint64_t bytes() const { return kTensors * numel * sizeof(float); }
};

// Segments [begin, begin + n) of `segments`, with offsets from `begin`: each element keeps its
// parameter, its index in it and its decay, so Adam and the initialisation treat it as before.
std::vector<Segment> cut_segments(const std::vector<Segment>& segments, std::size_t begin, std::size_t n) {
  std::vector<Segment> out;
  for (const Segment& s : segments) {
    const std::size_t lo = std::max(s.offset, begin), hi = std::min(s.offset + s.numel, begin + n);
    if (lo >= hi) continue;
    Segment c = s;
    c.offset = lo - begin;
    c.numel = hi - lo;
    if (s.param >= 0) c.param_offset = s.param_offset + (lo - s.offset);
    out.push_back(c);
  }
  return out;
}

std::vector<SubGroup> sub_groups(const std::vector<OptimizerPart>& parts, std::size_t sub_group_size) {
  std::vector<SubGroup> out;
  std::uint64_t offset = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const std::size_t size = parts[k].params.size();
    for (std::size_t b = 0; b < size; b += sub_group_size) {
      SubGroup g{static_cast<int>(k), b, std::min(sub_group_size, size - b), offset, {}};
      g.segments = cut_segments(parts[k].segments, b, g.numel);
      offset += (g.bytes() + io::kDirectAlignment - 1) / io::kDirectAlignment * io::kDirectAlignment;
      out.push_back(std::move(g));
    }
  }
  return out;
}

class NvmeOptimizer final : public HostGradientOptimizer {
 public:
  explicit NvmeOptimizer(const OptimizerContext& ctx)
      : HostGradientOptimizer(ctx, 1), groups_(sub_groups(ctx.parts, ctx.offload.nvme.sub_group_size)),
        masters_(dev_.ledger(), master_category(ctx.dtype), ctx.state_numel * sizeof(float), "fp32 master parameter shard (swap file)"),
        moments_(dev_.ledger(), Category::kOptimizerState, 2 * ctx.state_numel * sizeof(float), "Adam's moments (swap file)") {
    std::size_t largest = 0;
    for (const SubGroup& g : groups_) largest = std::max(largest, g.numel);
    const std::size_t slots = std::min<std::size_t>(ctx.offload.nvme.buffer_count, std::max<std::size_t>(1, groups_.size()));
    slots_.resize(slots);
    for (Slot& s : slots_) {
      s.state = host_buffer(Category::kOptimizerState, kTensors * largest, "NVMe swap buffer (a sub-group's masters and moments)", Dtype::kF32);
      if (mixed()) s.copy = host_buffer(Category::kParameters, largest, "16-bit parameters of a sub-group", ctx.dtype);
    }
    grads_[0] = host_buffer(Category::kGradients, ctx.state_numel, "gradient shard", ctx.dtype);
    if (!dev_.computes()) return;  // the planner's dry run: counted, not written
    folder_.emplace(ctx.offload.nvme.path, ctx.rank);
    const std::uint64_t file_bytes = groups_.empty() ? 0 : groups_.back().file_offset + groups_.back().bytes();
    check_disk_room(file_bytes);
    io::IoOptions io;
    io.block_size = ctx.offload.nvme.block_size;
    io.queue_depth = ctx.offload.nvme.queue_depth;
    file_.emplace(folder_->file("optimizer.swap"), io, true);
    initialise();
  }

  ~NvmeOptimizer() override {  // Adam in flight reads the slots; the file's requests point into them
    quiet_sync(dev_.host());
    file_.reset();
  }

  void gradient_landed(const OptimizerPart&, const Handle&) override {}  // Adam waits for the step
  void prepare(const AdamStep&) override {}

  void step(const AdamStep& s) override {
    drop_staging();
    stream(true, true, [&](const SubGroup& g, Slot& slot) {
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
    if (staged(u, tensor) || !file_) return span;
    transfer_part(u, tensor, false);
    staged_ = {u, tensor};
    return span;
  }

  void state_changed(int u, StateTensor tensor) override {
    ZERO_CHECK(staged(u, tensor), "state written to a part that is not staged");
    if (file_) transfer_part(u, tensor, true);
  }

  // The parameters the stage holds, from the loaded masters: rounded as Adam's fused copy rounds.
  void state_written(std::int64_t, bool in_flight) override {
    ZERO_CHECK(!in_flight, "an update in flight on the NVMe tier");
    drop_staging();
    stream(true, false, [&](const SubGroup& g, Slot& slot) {
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
    std::optional<io::AsyncFile::Ticket> read, write;
  };
  using Work = std::function<void(const SubGroup&, Slot&)>;

  [[noreturn]] static void refuse_lamb() {
    throw ConfigError("[engine] Lamb with offload_optimizer.device \"nvme\" is not supported yet: use Adam/AdamW, or device \"cpu\"");
  }

  void check_disk_room(std::uint64_t bytes) const {
    struct statvfs st {};
    if (::statvfs(folder_->path().c_str(), &st) != 0) return;
    const std::uint64_t free = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
    if (bytes > free) {
      throw io::IoError(cat("[io] offload nvme_path ", ctx_.offload.nvme.path, " has ", format_bytes_beside(free, bytes),
                            " free but this rank's swap file needs ", format_bytes_beside(bytes, free),
                            ": free space, use more ranks, or name a larger disk"));
    }
  }

  DeviceSpan slot_tensor(const Slot& s, const SubGroup& g, std::size_t t) const { return s.state.sub(t * g.numel, g.numel); }
  char* address(const DeviceSpan& s) { return static_cast<char*>(dev_.transport(s)); }

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

  // Every sub-group in order through the slots: read it (if `read`), run `work` on the host
  // stream, write it back (if `write`). Reads run up to `ahead` sub-groups in front, and the
  // previous sub-group's write is in flight, while the CPU works on the current one.
  void stream(bool read, bool write, const Work& work) {
    const std::size_t n = slots_.size(), count = groups_.size();
    if (read)
      for (const SubGroup& g : groups_) traffic_.read += g.bytes();
    const std::size_t ahead = n >= 3 ? n - 2 : n - 1;  // leaves the slot whose write is in flight
    std::size_t next_read = 0;
    for (std::size_t i = 0; i < count; ++i) {
      Slot& slot = slots_[i % n];
      if (file_) {
        for (; read && next_read <= i + ahead && next_read < count; ++next_read) start_read(next_read);
        if (!read) finish(slot.write);
        finish(slot.read);
      }
      work(groups_[i], slot);
      if (file_ && read && i + 1 < count) finish(slots_[(i + 1) % n].read);  // drives the ring while the CPU works
      dev_.host().synchronize();
      if (write) traffic_.written += groups_[i].bytes();  // counted in a dry run too: the planner's disk traffic
      if (file_ && write) slot.write = file_->write(groups_[i].file_offset, address(slot.state.span()), groups_[i].bytes());
    }
    if (file_) file_->wait_all();
  }

  void start_read(std::size_t i) {
    Slot& slot = slots_[i % slots_.size()];
    finish(slot.write);
    slot.read = file_->read(groups_[i].file_offset, address(slot.state.span()), groups_[i].bytes());
  }

  void finish(std::optional<io::AsyncFile::Ticket>& t) {
    if (!t) return;
    const auto ticket = *t;
    t.reset();
    file_->wait(ticket);
  }

  // The initial state: masters from the counter-based initialisation (the values every other
  // placement starts from), moments zero.
  void initialise() {
    stream(false, true, [&](const SubGroup& g, Slot& slot) {
      const OptimizerPart& p = ctx_.parts[g.part];
      dev_.fill(dev_.host(), slot.state.sub(g.numel, 2 * g.numel), 0.0f);
      dev_.init(dev_.host(), ctx_.layout.unit(p.unit), g.segments, ctx_.seed, slot_tensor(slot, g, 0));
    });
  }

  // One tensor of part u between the file and the staging buffer, a sub-group at a time.
  void transfer_part(int u, StateTensor tensor, bool to_file) {
    const std::size_t t = tensor_index(tensor);
    for (const SubGroup& g : groups_) {
      if (g.part != u) continue;
      const std::uint64_t at = g.file_offset + t * g.numel * sizeof(float);
      char* data = address(staging_.sub(g.begin, g.numel));
      if (to_file) file_->write(at, data, g.numel * sizeof(float));
      else file_->read(at, data, g.numel * sizeof(float));
      (to_file ? traffic_.written : traffic_.read) += g.numel * sizeof(float);
    }
    file_->wait_all();
  }

  bool staged(int u, StateTensor tensor) const { return staged_ && staged_->first == u && staged_->second == tensor; }

  void drop_staging() {
    staging_.reset();
    staged_.reset();
  }

  std::vector<SubGroup> groups_;
  DiskBytes masters_, moments_;           // nvme tier: the swap file's (state_numel) f32 masters, and m and v
  std::optional<io::SwapFolder> folder_;  // before the slots and the file: removed after both
  std::vector<Slot> slots_;
  std::optional<io::AsyncFile> file_;     // (sub-groups) [master | m | v] f32 each, nvme tier; absent in a dry run
  DeviceBuffer staging_;                  // (largest part) f32, host tier, other: one part of one tensor, for checkpoints
  std::optional<std::pair<int, StateTensor>> staged_;
  DiskTraffic traffic_;                   // bytes the steps (and checkpoints) moved to and from the file
};

}  // namespace

std::unique_ptr<ShardOptimizer> make_nvme_optimizer(const OptimizerContext& ctx) { return std::make_unique<NvmeOptimizer>(ctx); }

}  // namespace zero
