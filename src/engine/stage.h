// Internal to the engine: the stage policies. One interface, one implementation per stage
// (stage0.cpp .. stage3.cpp), chosen by number in make_stage(). A stage decides what stays
// whole and what stays sharded, and when the collectives run; the engine's step only names the
// phases (engine.cpp).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "common/trace.h"
#include "engine/engine.h"
#include "memory/ledger.h"
#include "optim/adamw.h"
#include "partition/layout.h"

namespace zero {

struct StageContext {
  const FlatLayout& layout;
  Communicator& comm;
  Ledger& ledger;
  std::uint64_t seed;
  OffloadOptions offload = {};
  bool clipping = false;     // gradients are scaled after the global norm: Adam waits for it
  Tracer* tracer = nullptr;  // spans of copies and of the CPU optimizer, if set
};

class Stage {
 public:
  virtual ~Stage() = default;

  // Makes unit u whole and readable through params(u) until the matching release(u).
  virtual void fetch(int u) = 0;
  virtual void release(int u) = 0;
  // Starts making unit u whole ahead of its fetch (stage 3 gathers asynchronously).
  virtual void prefetch(int /*u*/) {}
  virtual const float* params(int u) = 0;  // (unit padded) f32: whole unit, between fetch and release

  // A micro-batch's forward and backward begin. `first`: the first since the last optimizer
  // step; `boundary`: the last before the next one (gradient accumulation ends there).
  virtual void begin_micro_batch(bool first, bool boundary) = 0;
  // The whole gradient accumulator of unit u (backward adds into it).
  virtual float* grads(int u) = 0;
  // Unit u's gradient for this micro-batch is complete. Stages 0 and 1 accumulate locally and
  // reduce at the boundary only; stages 2 and 3 reduce-scatter every micro-batch and accumulate
  // the reduced slices (what they keep is only the shard).
  virtual void reduce_gradients(int u) = 0;
  // Waits for every reduction of this step, then divides the gradients by N * micro_batches:
  // the mean over every sequence of the global batch.
  virtual void finish_reduction(int micro_batches) = 0;

  // This rank's slice of every unit's reduced gradient (stage 0: the same elements, inside its
  // whole buffer), for the global gradient norm: summed per rank, then over ranks, in a fixed
  // order, the norm is the same in every stage.
  virtual std::vector<std::span<const float>> gradient_slices() = 0;
  // Multiplies every reduced gradient this rank will use by c (gradient clipping).
  virtual void scale_gradients(float c) = 0;

  // The coming optimizer step's scalars, given before its last micro-batch's backward (offload
  // starts Adam on each unit's slice as soon as its gradient has landed on the host).
  virtual void prepare_optimizer(const AdamStep& /*s*/) {}
  virtual void optimizer_step(const AdamStep& s) = 0;
  // Completes any optimizer work still in flight (the delayed update) and makes the parameters
  // current everywhere. A collective in stages 1 and 2 with offload.
  virtual void synchronize() {}
  // After the optimizer: make the updated parameters whole where the stage keeps them whole.
  virtual void gather_parameters() = 0;

  // Copies every parameter, whole and unpadded, in layout order into out (layout.numel()):
  // each unit fetched, copied, released. A collective where fetching gathers (stage 3).
  void copy_full_parameters(const FlatLayout& layout, float* out);
};

std::unique_ptr<Stage> make_stage(int stage, const StageContext& ctx);
// Stages 1-3 with offload_optimizer (and, for stage 3, offload_param): stage_offload.cpp.
std::unique_ptr<Stage> make_offload_stage(int stage, const StageContext& ctx);

// ---- shared by the stage implementations ----

// Adam's moments for this rank's shard (stages 1-3) or for everything (stage 0): m and v are
// laid out like the buffer they update.
struct AdamMoments {
  Buffer m;  // (numel) f32, device tier, optimizer state
  Buffer v;  // (numel) f32, device tier, optimizer state
  AdamMoments(Ledger& ledger, std::size_t numel);
};

// Runs Adam over the elements `segments` describe, at base offsets into p, g, m and v.
// Padding segments are skipped (they stay zero).
void adam_segments(const AdamStep& s, const std::vector<Segment>& segments, float* p, const float* g, float* m,
                   float* v);

// g /= (world size * micro-batches): the one averaging every stage performs, so stages agree.
void average_gradients(float* g, std::size_t n, int divisor);

// Unit gradients that exist only while backward produces them (stages 2 and 3): allocated at
// first use, reduce-scattered into this rank's gradient shard when complete, then freed. One
// reduction is in flight while backward goes on; the next one waits for it, so at most two
// whole unit gradients are alive.
class TransientGradients {
 public:
  TransientGradients(const StageContext& ctx, float* grad_shard);
  // A micro-batch begins: the previous one's last reduction completes first (its whole buffer
  // must not be reused while in flight). `accumulate`: add the reduced slices to the shard
  // instead of overwriting it.
  void begin_micro_batch(bool accumulate);
  ~TransientGradients();
  TransientGradients(const TransientGradients&) = delete;
  TransientGradients& operator=(const TransientGradients&) = delete;
  float* get(int u);
  void reduce(int u);
  void finish();

 private:
  void wait_pending();

  const FlatLayout& layout_;
  Communicator& comm_;
  Ledger& ledger_;
  float* grad_shard_;          // (shard) f32: where reduced slices land
  std::vector<Buffer> whole_;  // (num_units) whole unit gradients, alive between get and reduce
  int pending_unit_ = -1;
  Handle pending_;
  bool accumulate_ = false;
  Buffer reduced_;  // (unit slice) f32, comm buffer: a reduced slice on its way into the shard
};

// Stages 2 and 3: the reduced gradients and Adam's moments exist only for this rank's shard,
// filled unit by unit from transient whole unit gradients. A derived stage says where its
// parameter slices are and how units become whole.
class ShardedGradientStage : public Stage {
 public:
  explicit ShardedGradientStage(const StageContext& ctx);

  void begin_micro_batch(bool first, bool) override { transient_.begin_micro_batch(!first); }
  float* grads(int u) override { return transient_.get(u); }
  void reduce_gradients(int u) override { transient_.reduce(u); }
  void finish_reduction(int micro_batches) override;
  std::vector<std::span<const float>> gradient_slices() override;
  void scale_gradients(float c) override;
  void optimizer_step(const AdamStep& s) override;

 protected:
  virtual float* my_params(int u) = 0;  // this rank's slice of unit u's parameters
  StageContext ctx_;

 private:
  Buffer grad_shard_;    // (shard_numel) f32, device tier: this rank's reduced gradients
  AdamMoments moments_;  // (shard_numel) each
  TransientGradients transient_;
};

// The shard-sized gradient helpers every sharded stage shares: rank r's slices of each unit.
std::vector<std::span<const float>> shard_slices(const FlatLayout& layout, const float* shard);
void scale(float* g, std::size_t n, float c);

// Collectives in flight. Waits for all of them when destroyed (errors then are swallowed: the
// first error already surfaced), so no transfer outlives the buffers it writes; declare it after
// those buffers.
class PendingOps {
 public:
  PendingOps() = default;
  PendingOps(const PendingOps&) = delete;
  PendingOps& operator=(const PendingOps&) = delete;
  ~PendingOps();
  void add(Handle h) { ops_.push_back(std::move(h)); }
  void wait_all();

 private:
  std::vector<Handle> ops_;
};

// The parameters of stages 0-2: every unit whole on the device (counter-based init), this rank's
// slice of each updated by Adam (stages 1-2) and all-gathered back into the whole after a step.
class WholeParameters {
 public:
  explicit WholeParameters(const StageContext& ctx);
  float* unit(int u);             // (unit padded) f32: unit u, whole
  std::span<float> slice(int u);  // this rank's slice of unit u, inside the whole
  void gather();                  // every unit's slice all-gathered into the whole

 private:
  StageContext ctx_;
  Buffer params_;  // (padded_numel) f32, device tier
};

// Copies unit u's parameters, unpadded, from its whole flat buffer to out.
void copy_unpadded(const UnitPlace& unit, const float* whole, float* out);

}  // namespace zero
