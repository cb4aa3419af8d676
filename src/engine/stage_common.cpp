#include "common/error.h"
#include "engine/stage.h"
#include "optim/cpu_adam.h"
#include "partition/init.h"

#include <cstring>

namespace zero {

AdamMoments::AdamMoments(Ledger& ledger, std::size_t numel)
    : m(ledger, Tier::kDevice, Category::kOptimizerState, numel, "Adam first moment"),
      v(ledger, Tier::kDevice, Category::kOptimizerState, numel, "Adam second moment") {}

void adam_segments(const AdamStep& s, const std::vector<Segment>& segments, float* p, const float* g, float* m,
                   float* v) {
  for (const Segment& seg : segments) {
    if (seg.param < 0) continue;
    const std::size_t o = seg.offset, n = seg.numel;
    adam_step(s, seg.decay, {p + o, n}, {g + o, n}, {m + o, n}, {v + o, n});  // SIMD, bit-identical to the reference
  }
}

void average_gradients(float* g, std::size_t n, int divisor) {
  if (divisor == 1) return;
  const float w = static_cast<float>(divisor);
  for (std::size_t i = 0; i < n; ++i) g[i] = g[i] / w;
}

void scale(float* g, std::size_t n, float c) {
  for (std::size_t i = 0; i < n; ++i) g[i] = g[i] * c;
}

std::vector<std::span<const float>> shard_slices(const FlatLayout& layout, const float* shard) {
  std::vector<std::span<const float>> out;
  for (int u = 0; u < layout.num_units(); ++u) out.emplace_back(shard + layout.unit(u).shard_offset, layout.unit(u).slice);
  return out;
}

void copy_unpadded(const UnitPlace& unit, const float* whole, float* out) {
  std::memcpy(out, whole, unit.numel * sizeof(float));
}

WholeParameters::WholeParameters(const StageContext& ctx)
    : ctx_(ctx), params_(ctx.ledger, Tier::kDevice, Category::kParameters, ctx.layout.padded_numel(), "parameters") {
  for (int u = 0; u < ctx.layout.num_units(); ++u) {
    const UnitPlace& unit = ctx.layout.unit(u);
    init_segments(unit, ctx.layout.unit_segments(u), ctx.seed, params_.data() + unit.flat_offset);
  }
}

float* WholeParameters::unit(int u) { return params_.data() + ctx_.layout.unit(u).flat_offset; }

std::span<float> WholeParameters::slice(int u) {
  const std::size_t n = ctx_.layout.unit(u).slice;
  return {unit(u) + static_cast<std::size_t>(ctx_.comm.rank()) * n, n};
}

void WholeParameters::gather() {
  PendingOps gathers;
  for (int u = 0; u < ctx_.layout.num_units(); ++u) gathers.add(ctx_.comm.all_gather_async(slice(u), {unit(u), ctx_.layout.unit(u).padded}));
  gathers.wait_all();
}

void Stage::copy_full_parameters(const FlatLayout& layout, float* out) {
  for (int u = 0; u < layout.num_units(); ++u) {
    fetch(u);
    copy_unpadded(layout.unit(u), params(u), out);
    release(u);
    out += layout.unit(u).numel;
  }
}

ShardedGradientStage::ShardedGradientStage(const StageContext& ctx)
    : ctx_(ctx),
      grad_shard_(ctx.ledger, Tier::kDevice, Category::kGradients, ctx.layout.shard_numel(), "gradient shard"),
      moments_(ctx.ledger, ctx.layout.shard_numel()),
      transient_(ctx, grad_shard_.data()) {}

void ShardedGradientStage::finish_reduction(int micro_batches) {
  transient_.finish();
  average_gradients(grad_shard_.data(), grad_shard_.size(), ctx_.comm.size() * micro_batches);
}

std::vector<std::span<const float>> ShardedGradientStage::gradient_slices() { return shard_slices(ctx_.layout, grad_shard_.data()); }

void ShardedGradientStage::scale_gradients(float c) { scale(grad_shard_.data(), grad_shard_.size(), c); }

void ShardedGradientStage::optimizer_step(const AdamStep& s) {
  for (int u = 0; u < ctx_.layout.num_units(); ++u) {
    const std::size_t o = ctx_.layout.unit(u).shard_offset;
    adam_segments(s, ctx_.layout.slice_segments(u, ctx_.comm.rank()), my_params(u), grad_shard_.data() + o,
                  moments_.m.data() + o, moments_.v.data() + o);
  }
}

PendingOps::~PendingOps() {
  for (const Handle& h : ops_) {
    try {
      h.wait();
    } catch (...) {
    }
  }
}

void PendingOps::wait_all() {
  std::vector<Handle> ops = std::move(ops_);
  ops_.clear();
  for (const Handle& h : ops) h.wait();
}

TransientGradients::~TransientGradients() {
  try {
    pending_.wait();
  } catch (...) {
  }
}

TransientGradients::TransientGradients(const StageContext& ctx, float* grad_shard)
    : layout_(ctx.layout), comm_(ctx.comm), ledger_(ctx.ledger), grad_shard_(grad_shard), whole_(ctx.layout.num_units()) {}

void TransientGradients::begin_micro_batch(bool accumulate) {
  wait_pending();
  accumulate_ = accumulate;
}

float* TransientGradients::get(int u) {
  if (u == pending_unit_) wait_pending();  // never add into a buffer that is being reduced
  Buffer& b = whole_.at(u);
  if (b.empty()) {
    b = Buffer(ledger_, Tier::kDevice, Category::kGradients, layout_.unit(u).padded,
               cat("gradient of unit '", layout_.unit(u).name, "'"));
  }
  return b.data();
}

void TransientGradients::reduce(int u) {
  wait_pending();
  const UnitPlace& unit = layout_.unit(u);
  float* whole = get(u);  // a unit whose parameters got no gradient still reduces zeros
  float* dest = grad_shard_ + unit.shard_offset;
  if (accumulate_) {
    reduced_ = Buffer(ledger_, Tier::kDevice, Category::kCommBuffers, unit.slice, "reduced gradient slice");
    dest = reduced_.data();
  }
  pending_ = comm_.reduce_scatter_async({whole, unit.padded}, {dest, unit.slice});
  pending_unit_ = u;
}

void TransientGradients::wait_pending() {
  if (pending_unit_ < 0) return;
  pending_.wait();
  whole_[pending_unit_].reset();
  if (!reduced_.empty()) {  // accumulate, in micro-batch order
    float* dest = grad_shard_ + layout_.unit(pending_unit_).shard_offset;
    for (std::size_t i = 0; i < reduced_.size(); ++i) dest[i] = dest[i] + reduced_.data()[i];
    reduced_.reset();
  }
  pending_unit_ = -1;
}

void TransientGradients::finish() {
  wait_pending();
  for (const Buffer& b : whole_) ZERO_CHECK(b.empty(), "a unit gradient was never reduced");
}

}  // namespace zero
