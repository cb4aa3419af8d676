#include "common/error.h"
#include "engine/stage.h"

namespace zero {

void copy_full_parameters(Stage& stage, const FlatLayout& layout, Device& device, std::span<float> out) {
  ZERO_CHECK(out.size() == layout.numel(), "full parameters into ", out.size(), " elements, not ", layout.numel());
  // The unpadded units land in a host buffer through the device's copy, then leave the ledger.
  DeviceBuffer host = device.alloc(Tier::kHost, Category::kOther, layout.largest_unit(), "parameters copied out", Dtype::kF32, false);
  struct ExactReads {  // the weights as the optimizer holds them, even where compute gathers them quantised
    Stage& stage;
    explicit ExactReads(Stage& s) : stage(s) { stage.begin_exact_reads(); }
    ~ExactReads() { stage.end_exact_reads(); }
  } exact(stage);
  std::size_t at = 0;
  for (int u = 0; u < layout.num_units(); ++u) {
    const std::size_t n = layout.unit(u).numel;
    stage.fetch(u);
    device.convert(device.compute(), host.sub(0, n), stage.params(u).sub(0, n));  // 16-bit parameters widen exactly
    stage.release(u);
    if (device.computes()) {
      const auto* view = static_cast<const float*>(device.transport(host.sub(0, n)));
      std::copy(view, view + n, out.begin() + static_cast<std::ptrdiff_t>(at));
    }
    at += n;
  }
}

int use_position(const FlatLayout& layout, int unit, bool backward) {
  return backward ? 2 * layout.num_units() - 1 - unit : unit;
}

std::vector<int> units_used_at(const FlatLayout& layout, int position) {
  const int units = layout.num_units();
  return layout.units_read_by(position < units ? position : 2 * units - 1 - position);
}

std::vector<OptimizerPart> slice_parts(const FlatLayout& layout, int rank, const std::function<DeviceSpan(int)>& params) {
  std::vector<OptimizerPart> parts;
  for (int u = 0; u < layout.num_units(); ++u) {
    const UnitPlace& unit = layout.unit(u);
    parts.push_back({u, params(u), layout.slice_segments(u, rank), unit.shard_offset, 0, unit.slice});
  }
  return parts;
}

WholeParameters::WholeParameters(const StageContext& ctx)
    : ctx_(ctx),
      params_(ctx.device.alloc(Tier::kDevice, Category::kParameters, ctx.layout.padded_numel(), "parameters", ctx.dtype)),
      gathers_(ctx.layout.num_units()) {
  for (int u = 0; u < ctx.layout.num_units(); ++u) {
    ctx.device.init(ctx.device.compute(), ctx.layout.unit(u), ctx.layout.unit_segments(u), ctx.seed, unit(u));
  }
}

WholeParameters::~WholeParameters() {
  for (const Handle& h : gathers_) {
    try {
      h.wait();
    } catch (...) {
    }
  }
}

DeviceSpan WholeParameters::unit(int u) const {
  const UnitPlace& p = ctx_.layout.unit(u);
  return params_.sub(p.flat_offset, p.padded);
}

DeviceSpan WholeParameters::slice(int u) const {
  const UnitPlace& p = ctx_.layout.unit(u);
  return unit(u).sub(ctx_.layout.slice_offset(u, ctx_.comm.rank()), p.slice);
}

void WholeParameters::start_gather() {
  for (int u = 0; u < ctx_.layout.num_units(); ++u) gathers_[u] = ctx_.comm.all_gather(slice(u), unit(u), ctx_.layout.unit(u).name);
}

void WholeParameters::wait(int u) {
  Handle h = std::move(gathers_.at(u));
  gathers_[u] = Handle();
  h.wait();
}

void WholeParameters::wait_all() {
  for (int u = 0; u < ctx_.layout.num_units(); ++u) wait(u);
}

TransientGradients::~TransientGradients() {
  try {
    pending_.wait();
  } catch (...) {
  }
}

DeviceSpan TransientGradients::get(int u) {
  if (u == pending_unit_) wait_pending();  // never add into a buffer that is being reduced
  DeviceBuffer& b = whole_.at(u);
  if (b.empty()) {
    b = ctx_.device.alloc(Tier::kDevice, Category::kGradients, ctx_.layout.unit(u).padded,
                          cat("gradient of unit '", ctx_.layout.unit(u).name, "'"), ctx_.dtype);
  }
  return b.span();
}

void TransientGradients::reduce(int u, ShardOptimizer& optimizer) {
  wait_pending();
  const DeviceSpan whole = get(u);  // a unit whose parameters got no gradient still reduces zeros
  const DeviceSpan target = optimizer.reduce_target(u);
  pending_ = ctx_.comm.reduce_scatter(whole, target, ctx_.layout.unit(u).name);
  pending_unit_ = u;
  optimizer.reduced(u, target, pending_);
}

void TransientGradients::wait_pending() {
  if (pending_unit_ < 0) return;
  pending_.wait();
  whole_[pending_unit_].reset();
  pending_unit_ = -1;
}

void TransientGradients::finish() {
  wait_pending();
  for (const DeviceBuffer& b : whole_) ZERO_CHECK(b.empty(), "a unit gradient was never reduced");
}

}  // namespace zero
