#include "planner/step_walk.h"

#include <vector>

#include "comm/segmented.h"

namespace zero::planner_detail {
namespace {

class StepWalk {
 public:
  StepWalk(const FlatLayout& layout, const WalkOptions& o, const TierBytes& baseline)
      : layout_(layout), o_(o), live_(baseline), peak_(baseline), users_(layout.num_units(), -1),
        staged_(layout.num_units(), false), grad_alive_(layout.num_units(), false),
        transient_grads_(o.stage >= 2) {}

  WalkResult run() {
    for (int mb = 0; mb < o_.micro_batches; ++mb) {
      if (transient_grads_) wait_pending();  // begin_micro_batch: the last reduction completes
      first_ = mb == 0;
      boundary_ = mb + 1 == o_.micro_batches;
      forward();
      backward();
    }
    if (transient_grads_) wait_pending();  // Engine::step: finish_reduction
    if (o_.stage == 1 || o_.stage == 2) {  // gather_parameters after the optimizer
      for (int u = 0; u < layout_.num_units(); ++u) {
        count(Collective::kAllGather, layout_.unit(u).slice, o_.param_bytes);
        transient(scratch(Collective::kAllGather, layout_.unit(u).slice));
      }
    }
    return {peak_, traffic_, gathered_slices_, reduced_slices_};
  }

 private:
  // Engine::forward: units first to last; the next unit is prefetched unless this one borrows.
  void forward() {
    const int units = layout_.num_units();
    for (int u = 0; u < units; ++u) {
      const auto read = layout_.units_read_by(u);
      for (int v : read) fetch(v);
      if (u + 1 < units && read.size() == 1) start_gather(u + 1);
      for (int v : read) release(v);
    }
  }

  // Engine::backward: units last to first; a unit's gradient is reduced after its last reader.
  void backward() {
    for (int u = layout_.num_units() - 1; u >= 0; --u) {
      const auto read = layout_.units_read_by(u);
      for (int v : read) fetch(v);
      if (u > 0 && read.size() == 1) start_gather(u - 1);
      for (int v : read) gradient_view(v);
      for (int v : read) release(v);
      for (int v : read)
        if (layout_.gradient_ready_after(v) == u) reduce(v);
    }
  }

  // ---- stage 3's gathered units (other stages keep parameters whole: nothing to do) ----
  // A gather allocates the whole unit and, with offload_param, a staging buffer for the rank's
  // slice copied in from the host to send, freed once the gather has completed: at the fetch,
  // which waits for it (Stage3::fetch).
  void start_gather(int u) {
    if (o_.stage != 3 || users_[u] >= 0) return;  // whole already, or on its way
    const UnitPlace& unit = layout_.unit(u);
    users_[u] = 0;
    alloc(Category::kGatheredParameters, unit.padded * o_.param_bytes);
    if (o_.offload_param) {
      staged_[u] = true;
      alloc(Category::kCommBuffers, unit.slice * o_.param_bytes);
    }
    count(Collective::kAllGather, unit.slice, o_.param_bytes);
    transient(scratch(Collective::kAllGather, unit.slice));
    gathered_slices_ += unit.slice;
  }
  void fetch(int u) {
    if (o_.stage != 3) return;
    start_gather(u);
    if (staged_[u]) {
      staged_[u] = false;
      free(Category::kCommBuffers, layout_.unit(u).slice * o_.param_bytes);
    }
    ++users_[u];
  }
  void release(int u) {
    if (o_.stage != 3) return;
    if (--users_[u] == 0) {
      users_[u] = -1;
      free(Category::kGatheredParameters, layout_.unit(u).padded * o_.param_bytes);
    }
  }

  // ---- gradients ----
  // Stages 0 and 1 keep whole gradients for the run; stages 2 and 3 allocate a unit's whole
  // gradient at its first view in a micro-batch (TransientGradients::get).
  void gradient_view(int u) {
    if (!transient_grads_) return;
    if (u == pending_) wait_pending();  // never add into a buffer that is being reduced
    if (grad_alive_[u]) return;
    grad_alive_[u] = true;
    alloc(Category::kGradients, layout_.unit(u).padded * o_.grad_bytes);
  }

  void reduce(int u) {
    const UnitPlace& unit = layout_.unit(u);
    const std::uint64_t scratch = this->scratch(o_.stage == 0 ? Collective::kAllReduce : Collective::kReduceScatter, unit.slice);
    if (!transient_grads_) {
      // Stages 0 and 1 without offload accumulate locally and reduce at the last micro-batch
      // only. The comm thread runs one reduction at a time and the compute thread allocates
      // nothing meanwhile, so one unit's scratch at a time is what a rank holds.
      if (!boundary_) return;
      count(o_.stage == 0 ? Collective::kAllReduce : Collective::kReduceScatter, unit.slice, o_.grad_bytes);
      reduced_slices_ += unit.slice;
      alloc(Category::kCommBuffers, scratch);
      free(Category::kCommBuffers, scratch);
      return;
    }
    // TransientGradients::reduce: wait for the previous reduction (freeing its unit gradient and
    // buffers), then start this one. After the first micro-batch (with optimizer offload:
    // always) the reduced slice lands in its own buffer (ShardOptimizer::reduce_target) before it
    // is added to the shard (copied to the host).
    wait_pending();
    gradient_view(u);  // a unit whose parameters got no gradient still reduces zeros
    const bool landing = !first_ || o_.offload_optimizer;  // a transient slice: added later, or to the host
    pending_bytes_ = scratch + (landing ? unit.slice * o_.grad_bytes : 0);
    alloc(Category::kCommBuffers, pending_bytes_);
    count(Collective::kReduceScatter, unit.slice, o_.grad_bytes);
    reduced_slices_ += unit.slice;
    pending_ = u;
  }

  void wait_pending() {
    if (pending_ < 0) return;
    free(Category::kCommBuffers, pending_bytes_);
    free(Category::kGradients, layout_.unit(pending_).padded * o_.grad_bytes);
    grad_alive_[pending_] = false;
    pending_ = -1;
  }

  // The communication scratch of one collective of k elements per rank, as Communicator::
  // scratch_bytes computes it (comm/segmented.cpp): the packing of pieces when there is more than
  // one, plus, for reductions on the MPI backend, its all-to-all of one piece. Gathers' scratch
  // lives while the comm thread runs them: counted as a moment at their issue.
  std::uint64_t scratch(Collective kind, std::uint64_t k) const {
    const bool gather = kind == Collective::kAllGather;
    const std::uint64_t seg = gather ? o_.gather_segment : o_.reduce_segment;
    const Pieces p = split_into_pieces(k, seg == 0 ? std::max<std::uint64_t>(k, 1) : seg);
    const std::uint64_t bytes = gather ? o_.param_bytes : o_.grad_bytes, n = layout_.world_size();
    const std::uint64_t packing = p.count > 1 ? n * p.s * bytes : 0;
    return packing + (!gather && o_.comm_scratch ? n * p.largest() * bytes : 0);
  }
  void transient(std::uint64_t bytes) {
    alloc(Category::kCommBuffers, bytes);
    free(Category::kCommBuffers, bytes);
  }

  // ---- accounting ----
  void alloc(Category c, std::uint64_t bytes) {
    live_[c] += bytes;
    if (live_.total() > peak_.total()) peak_ = live_;
  }
  void free(Category c, std::uint64_t bytes) { live_[c] -= bytes; }

  // As Communicator counts it: slice * (N - 1) elements sent per phase; all_reduce has two.
  void count(Collective kind, std::uint64_t slice, std::uint64_t element_bytes) {
    const std::uint64_t phases = kind == Collective::kAllReduce ? 2 : 1;
    const auto k = static_cast<int>(kind);
    traffic_.sent[k] += phases * slice * static_cast<std::uint64_t>(layout_.world_size() - 1) * element_bytes;
    ++traffic_.calls[k];
  }

  const FlatLayout& layout_;
  WalkOptions o_;
  TierBytes live_, peak_;
  StepTraffic traffic_;
  std::vector<int> users_;        // stage 3: -1 not whole; else fetches not yet released
  std::vector<bool> staged_;      // stage 3 + offload_param: the slice's staging buffer is alive
  std::vector<bool> grad_alive_;  // transient gradients: whole unit gradient allocated
  bool transient_grads_;          // stages 2, 3, and stage 1 with optimizer offload
  int pending_ = -1;              // the unit whose reduction is in flight
  std::uint64_t pending_bytes_ = 0;
  std::uint64_t gathered_slices_ = 0, reduced_slices_ = 0;
  bool first_ = true, boundary_ = true;
};

}  // namespace

WalkResult walk_step(const FlatLayout& layout, const WalkOptions& options, const TierBytes& baseline) {
  return StepWalk(layout, options, baseline).run();
}

}  // namespace zero::planner_detail
