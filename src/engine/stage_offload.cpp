// Stages 1-3 with ZeRO-Offload: Adam's moments, the fp32 master parameters of this rank's shard
// and its reduced gradients live in the host tier, and Adam runs on the CPU.
//
// The device keeps what compute reads: stages 1 and 2 the whole parameters (and, as DeepSpeed
// does for offload, stage 1 sheds its whole gradients like stage 2); stage 3 its parameter shard,
// or with offload_param nothing at all between uses. As backward completes a unit, its gradient
// is reduce-scattered into a small device slice (the comm thread), copied to the host shard (the
// copy thread), and, once it has landed, the CPU optimizer thread runs Adam over that unit's
// slice and copies the updated slice back to the device, while backward goes on with the units
// before it. Clipping needs the norm of every slice first, so with clipping Adam waits for the
// step. Every element sees the same operations in the same order as without offload, so the
// weights are bit-identical to the same stage without offload.
//
// The delayed update (DPU): after the warm-up steps, step t's Adam is queued on the CPU and the
// step returns; step t+1's forward and backward run on the device with the parameters from before
// step t's update, meanwhile. At step t+1's optimizer phase the CPU's result is copied back and
// gathered, and step t+1's Adam is queued. Two host gradient buffers alternate, so gradients
// landing for step t+1 never meet the CPU reading step t's.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <optional>

#include "common/error.h"
#include "common/task_queue.h"
#include "engine/stage.h"
#include "partition/init.h"

namespace zero {
namespace {

// Host memory this process may still take, from /proc/meminfo (MemAvailable), or 0 if unknown.
std::uint64_t host_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

int ranks_on_this_node(int fallback) {
  if (const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) return std::max(1, std::atoi(v));
  return fallback;
}

class OffloadStage final : public Stage {
 public:
  OffloadStage(int stage, const StageContext& ctx)
      : ctx_(ctx),
        stage3_(stage == 3),
        host_grad_buffers_(ctx.offload.delayed_update ? 2 : 1),
        gathered_(ctx.layout.num_units()) {
    check_host_room();
    const FlatLayout& L = ctx.layout;
    const std::size_t shard = L.shard_numel();
    if (!stage3_) params_ = Buffer(ctx.ledger, Tier::kDevice, Category::kParameters, L.padded_numel(), "parameters");
    else if (!ctx.offload.params) params_ = Buffer(ctx.ledger, Tier::kDevice, Category::kParameters, shard, "parameter shard");
    master_ = host_buffer(Category::kParameters, shard, "fp32 master parameter shard");
    m_ = host_buffer(Category::kOptimizerState, shard, "Adam first moment shard");
    v_ = host_buffer(Category::kOptimizerState, shard, "Adam second moment shard");
    for (int i = 0; i < host_grad_buffers_; ++i) host_grads_[i] = host_buffer(Category::kGradients, shard, "gradient shard");
    whole_grads_.resize(L.num_units());
    for (int u = 0; u < L.num_units(); ++u) {
      const UnitPlace& unit = L.unit(u);
      init_segments(unit, L.slice_segments(u, rank()), ctx.seed, master_.data() + unit.shard_offset);
      if (!stage3_) init_segments(unit, L.unit_segments(u), ctx.seed, params_.data() + unit.flat_offset);
      else if (!ctx.offload.params) copy_to_device(u);
    }
  }

  ~OffloadStage() override {
    // Nothing in flight may outlive the buffers it touches.
    for (auto& p : pending_) quiet_wait(p.copied);
    for (auto& f : adam_) quiet_wait(f);
  }

  void fetch(int u) override {
    if (!stage3_) return;
    start_gather(u);
    Gathered& g = *gathered_[u];
    g.done.wait();
    g.staging.reset();
    ++g.users;
  }

  void release(int u) override {
    if (!stage3_) return;
    Gathered& g = gathered_.at(u).value();
    ZERO_CHECK(g.users > 0, "release without fetch of unit ", u);
    if (--g.users == 0) gathered_[u].reset();
  }

  void prefetch(int u) override {
    if (stage3_) start_gather(u);
  }

  const float* params(int u) override {
    if (!stage3_) return params_.data() + ctx_.layout.unit(u).flat_offset;
    ZERO_CHECK(gathered_.at(u) && gathered_[u]->users > 0, "unit ", u, " read while not fetched");
    return gathered_[u]->whole.data();
  }

  void begin_micro_batch(bool first, bool boundary) override {
    while (!pending_.empty()) retire_oldest();
    micro_batches_ = first ? 1 : micro_batches_ + 1;
    first_ = first;
    boundary_ = boundary;
  }

  float* grads(int u) override {
    // Never add into a buffer that is being reduced (one reduction is in flight at most).
    if (!pending_.empty() && pending_.front().unit == u) retire_oldest();
    Buffer& b = whole_grads_.at(u);
    if (b.empty()) {
      b = Buffer(ctx_.ledger, Tier::kDevice, Category::kGradients, ctx_.layout.unit(u).padded,
                 cat("gradient of unit '", ctx_.layout.unit(u).name, "'"));
    }
    return b.data();
  }

  void reduce_gradients(int u) override {
    while (!pending_.empty()) retire_oldest();  // one reduction in flight: at most two whole unit gradients
    const UnitPlace& unit = ctx_.layout.unit(u);
    Pending p;
    p.unit = u;
    p.whole = std::move(whole_grads_.at(u));
    if (p.whole.empty()) p.whole = Buffer(ctx_.ledger, Tier::kDevice, Category::kGradients, unit.padded, "gradient");
    p.slice = Buffer(ctx_.ledger, Tier::kDevice, Category::kCommBuffers, unit.slice, "reduced gradient slice");
    const Handle reduced = ctx_.comm.reduce_scatter_async(p.whole.span(), p.slice.span());
    const float* slice = p.slice.data();
    float* host = host_grads_[current_].data();  // captured now: current_ flips at delayed steps
    const bool first = first_, boundary = boundary_;
    const int divisor = ctx_.comm.size() * micro_batches_;
    p.copied = copies_.push([this, reduced, slice, host, u, first, boundary, divisor] {
      reduced.wait();  // rethrows a failed reduction into this task's future
      land_gradient(u, slice, host, first, boundary, divisor);
    });
    if (boundary_ && adam_during_backward()) {
      const std::shared_future<void> landed = p.copied;
      adam_on_current_ = true;
      adam_.push_back(optimizer_.push([this, landed, u, s = *next_step_, host] {
        landed.get();  // a failed reduction or copy: no Adam on a partial gradient
        update_unit(u, s, host, true);
      }));
    }
    pending_.push_back(std::move(p));
  }

  void finish_reduction(int micro_batches) override {
    ZERO_CHECK(micro_batches == micro_batches_, "micro-batch count");
    while (!pending_.empty()) retire_oldest();
  }

  std::vector<std::span<const float>> gradient_slices() override { return shard_slices(ctx_.layout, host_grads_[current_].data()); }

  void scale_gradients(float c) override {
    // Adam queued during backward reads this buffer; a delayed step's Adam reads the other one.
    ZERO_CHECK(!adam_on_current_, "gradients scaled after Adam started on them");
    scale(host_grads_[current_].data(), host_grads_[current_].size(), c);
  }

  void prepare_optimizer(const AdamStep& s) override { next_step_ = s; }

  void optimizer_step(const AdamStep& s) override {
    ++steps_;
    if (!delayed(steps_)) {
      if (adam_on_current_) {
        // Adam already ran during backward with the scalars given to prepare_optimizer.
        if (!(s == *next_step_)) {
          wait_adam();
          throw ConfigError("[engine] the learning rate changed between the last forward_backward and step(): with "
                            "offload, Adam starts during backward, so set the learning rate before the step's first "
                            "forward_backward");
        }
      } else {  // clipping: Adam now, over all units
        float* host = host_grads_[current_].data();
        for (int u = 0; u < ctx_.layout.num_units(); ++u)
          adam_.push_back(optimizer_.push([this, u, s, host] { update_unit(u, s, host, true); }));
      }
      wait_adam();
      return;
    }
    // The delayed update: bring the previous step's result to the device, then queue this one.
    wait_adam();
    for (int u = 0; u < ctx_.layout.num_units(); ++u) copy_to_device(u);
    const float* grads = host_grads_[current_].data();
    for (int u = 0; u < ctx_.layout.num_units(); ++u)
      adam_.push_back(optimizer_.push([this, u, s, grads] { update_unit(u, s, grads, false); }));
    current_ = (current_ + 1) % host_grad_buffers_;
    dirty_ = true;
  }

  void gather_parameters() override {
    if (stage3_) return;
    PendingOps gathers;
    for (int u = 0; u < ctx_.layout.num_units(); ++u) {
      const UnitPlace& unit = ctx_.layout.unit(u);
      gathers.add(ctx_.comm.all_gather_async({my_device_params(u), unit.slice}, {params_.data() + unit.flat_offset, unit.padded}));
    }
    gathers.wait_all();
  }

  void synchronize() override {
    if (!dirty_) return;
    wait_adam();
    for (int u = 0; u < ctx_.layout.num_units(); ++u) copy_to_device(u);
    gather_parameters();
    dirty_ = false;
  }

 private:
  struct Pending {
    int unit = -1;
    Buffer whole;  // (unit padded) f32, device: the unit's gradient being reduced
    Buffer slice;  // (unit slice) f32, device: its reduced slice, on its way to the host
    std::shared_future<void> copied;
  };
  struct Gathered {
    Buffer staging;  // (slice) f32, device: this rank's slice brought from the host (offload_param)
    Buffer whole;    // (unit padded) f32, device: the gathered unit
    Handle done;
    int users = 0;
    Gathered() = default;
    Gathered(const Gathered&) = delete;
    Gathered& operator=(const Gathered&) = delete;
    ~Gathered() {
      try {
        done.wait();
      } catch (...) {
      }
    }
  };

  static void quiet_wait(const std::shared_future<void>& f) {
    try {
      if (f.valid()) f.wait();
    } catch (...) {
    }
  }

  int rank() const { return ctx_.comm.rank(); }
  bool delayed(std::int64_t step) const { return ctx_.offload.delayed_update && step > ctx_.offload.warmup_steps; }
  bool adam_during_backward() const { return !ctx_.clipping && !delayed(steps_ + 1) && next_step_.has_value(); }

  Buffer host_buffer(Category c, std::size_t n, const std::string& what) {
    Buffer b(ctx_.ledger, Tier::kHost, c, n, what);
    if (ctx_.offload.pin_memory && !b.lock_pages() && !pin_warned_) {
      std::fprintf(stderr, "zero: [offload] pin_memory: cannot page-lock %s of host memory (%s); using pageable memory\n",
                   format_bytes(n * sizeof(float)).c_str(), std::strerror(errno));
      pin_warned_ = true;
    }
    return b;
  }

  // Refuses, before allocating, host state that this node cannot hold.
  void check_host_room() const {
    const std::uint64_t per_rank = ctx_.layout.shard_numel() * sizeof(float) * (3 + host_grad_buffers_);
    const int local = ranks_on_this_node(ctx_.comm.backend() == "threads" ? ctx_.comm.size() : 1);
    const std::uint64_t available = host_available_bytes();
    const auto cap = ctx_.ledger.capacity(Tier::kHost);
    const std::uint64_t room = cap ? *cap : available / static_cast<std::uint64_t>(local);
    if ((cap || available > 0) && per_rank > room) {
      throw OutOfMemoryError(cat("[offload] the offloaded state needs ", format_bytes(per_rank), " of host memory per rank (",
                                 format_bytes(per_rank * local), " for the ", local, " ranks on this node) but ",
                                 format_bytes(room), " per rank is available: use more ranks or nodes, or turn offload off"));
    }
  }

  float* my_device_params(int u) {
    const UnitPlace& unit = ctx_.layout.unit(u);
    if (!stage3_) return params_.data() + unit.flat_offset + static_cast<std::size_t>(rank()) * unit.slice;
    return ctx_.offload.params ? nullptr : params_.data() + unit.shard_offset;
  }

  // The copy thread: a reduced slice lands in the host gradient shard, added to what earlier
  // micro-batches left there; at the last micro-batch it is averaged, as every stage averages.
  void land_gradient(int u, const float* slice, float* host, bool first, bool boundary, int divisor) {
    TraceSpan span(ctx_.tracer, Lane::kCopy, cat("gradient to host ", ctx_.layout.unit(u).name));
    const UnitPlace& unit = ctx_.layout.unit(u);
    float* g = host + unit.shard_offset;
    if (first) std::memcpy(g, slice, unit.slice * sizeof(float));
    else for (std::size_t i = 0; i < unit.slice; ++i) g[i] = g[i] + slice[i];
    if (boundary) average_gradients(g, unit.slice, divisor);
  }

  // The optimizer thread: Adam over this rank's slice of unit u, then (unless delayed) the
  // updated slice back to the device.
  void update_unit(int u, const AdamStep& s, const float* grads, bool copy_back) {
    {
      TraceSpan span(ctx_.tracer, Lane::kOptimizer, cat("adam ", ctx_.layout.unit(u).name));
      const std::size_t o = ctx_.layout.unit(u).shard_offset;
      adam_segments(s, ctx_.layout.slice_segments(u, rank()), master_.data() + o, grads + o, m_.data() + o, v_.data() + o);
    }
    if (copy_back) copy_to_device(u);
  }

  void copy_to_device(int u) {
    float* dst = my_device_params(u);
    if (dst == nullptr) return;  // offload_param: the host shard is the only copy
    TraceSpan span(ctx_.tracer, Lane::kCopy, cat("parameters to device ", ctx_.layout.unit(u).name));
    const UnitPlace& unit = ctx_.layout.unit(u);
    std::memcpy(dst, master_.data() + unit.shard_offset, unit.slice * sizeof(float));
  }

  void retire_oldest() {
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    p.copied.get();  // rethrows a failed reduction or copy
  }

  void wait_adam() {
    std::vector<std::shared_future<void>> adam = std::move(adam_);
    adam_.clear();
    adam_on_current_ = false;
    for (auto& f : adam) f.get();  // rethrows a failed update
  }

  // Stage 3: makes unit u whole on the device: this rank's slice (from the device shard, or
  // brought from the host shard with offload_param) all-gathered into a temporary buffer.
  void start_gather(int u) {
    if (gathered_.at(u)) return;
    const UnitPlace& unit = ctx_.layout.unit(u);
    // Allocate first: a refused allocation must not leave the unit marked as gathered.
    Buffer whole(ctx_.ledger, Tier::kDevice, Category::kGatheredParameters, unit.padded,
                 cat("gathered parameters of unit '", unit.name, "'"));
    Buffer staging;
    const float* source = my_device_params(u);
    if (source == nullptr) {
      TraceSpan span(ctx_.tracer, Lane::kCopy, cat("parameters to device ", unit.name));
      staging = Buffer(ctx_.ledger, Tier::kDevice, Category::kCommBuffers, unit.slice, "parameter slice from the host");
      std::memcpy(staging.data(), master_.data() + unit.shard_offset, unit.slice * sizeof(float));
      source = staging.data();
    }
    Gathered& g = gathered_[u].emplace();
    g.whole = std::move(whole);
    g.staging = std::move(staging);
    g.done = ctx_.comm.all_gather_async({source, unit.slice}, g.whole.span());
  }

  StageContext ctx_;
  bool stage3_;
  int host_grad_buffers_;                      // 2 with the delayed update
  Buffer params_;                              // device: whole (stages 1-2) or shard (stage 3) f32; empty with offload_param
  Buffer master_;                              // (shard) f32, host: fp32 master parameters
  Buffer m_, v_;                               // (shard) f32, host: Adam's moments
  Buffer host_grads_[2];                       // (shard) f32, host: reduced gradients (two with DPU)
  int current_ = 0;                            // the host gradient buffer this step fills
  std::vector<Buffer> whole_grads_;            // (num_units) device, whole unit gradients being accumulated
  std::vector<std::optional<Gathered>> gathered_;  // (num_units) stage 3
  int micro_batches_ = 0;
  bool first_ = true, boundary_ = true, dirty_ = false, pin_warned_ = false;
  bool adam_on_current_ = false;  // Adam tasks queued during backward read host_grads_[current_]
  std::int64_t steps_ = 0;
  std::optional<AdamStep> next_step_;
  std::vector<std::shared_future<void>> adam_;  // Adam tasks of the step in flight
  TaskQueue optimizer_;                        // the CPU optimizer thread
  TaskQueue copies_;                           // the copy thread (a device's copy stream)
  std::deque<Pending> pending_;                // reductions in flight, oldest first
};

}  // namespace

std::unique_ptr<Stage> make_offload_stage(int stage, const StageContext& ctx) {
  ZERO_CHECK(stage >= 1 && stage <= 3, "offload with stage ", stage);
  return std::make_unique<OffloadStage>(stage, ctx);
}

}  // namespace zero
