#include "engine/zenflow_columns.h"

#include <algorithm>

#include "common/error.h"
#include "engine/zenflow.h"

namespace zero {

ZenflowColumns::ZenflowColumns(const OptimizerContext& ctx) : ctx_(ctx), dev_(ctx.device), z_(ctx.offload.zenflow) {
  std::size_t device_numel = 0;
  for (const OptimizerPart& p : ctx_.parts) {
    ZERO_CHECK(p.params.tier() == Tier::kDevice, "ZenFlow with the parameters on the host tier");
    runs_.push_back(runs_of(p, device_numel));
  }
  dm_ = dev_.alloc(Tier::kDevice, Category::kOptimizerState, device_numel, "ZenFlow's first moment of the selected columns");
  dv_ = dev_.alloc(Tier::kDevice, Category::kOptimizerState, device_numel, "ZenFlow's second moment of the selected columns");
  dp_ = dev_.alloc(Tier::kDevice, Category::kParameters, device_numel, "ZenFlow's selected columns, packed");
  dg_ = dev_.alloc(Tier::kDevice, Category::kGradients, device_numel, "ZenFlow's gradient of the selected columns", ctx.dtype);
  if (mixed()) dp16_ = dev_.alloc(Tier::kDevice, Category::kParameters, device_numel, "ZenFlow's selected columns, packed, 16-bit", ctx.dtype);
}

// The runs of part p's parameters; `device_numel` grows by their device-side capacity.
std::vector<ZenflowColumns::ColumnRun> ZenflowColumns::runs_of(const OptimizerPart& p, std::size_t& device_numel) const {
  std::vector<ColumnRun> runs;
  for (const Segment& seg : p.segments) {
    if (seg.param < 0) continue;
    const std::vector<std::int64_t>& shape = ctx_.layout.unit(p.unit).params.at(seg.param).spec.shape;
    ColumnRun r;
    r.offset = seg.offset;
    r.numel = r.packed = seg.numel;
    r.first = seg.param_offset;
    r.segment = seg;
    r.segment.offset = 0;
    if (shape.size() == 2) {
      r.cols = static_cast<std::size_t>(shape[1]);
      const zenflow::WholeRows whole = zenflow::whole_rows(r.first, seg.numel, r.cols);
      r.offset += whole.begin - r.first;
      r.first = whole.begin;
      r.numel = whole.rows * r.cols;
      r.packed = whole.rows * zenflow::columns_to_select(z_, r.cols);
      if (r.packed == 0) continue;  // no whole row, or no column selected: all the CPU's
    }
    r.device_offset = device_numel;
    device_numel += r.packed;
    runs.push_back(std::move(r));
  }
  return runs;
}

AdamStep ZenflowColumns::scalars(const AdamStep& s, std::int64_t t) const {
  AdamConfig c{s.lr, s.beta1, s.beta2, s.eps, s.weight_decay, s.decoupled, ctx_.bias_correction};
  return adam_step_scalars(c, t);
}

bool ZenflowColumns::step(const AdamStep& s, const DeviceBuffer& grads, const std::function<void()>& between) {
  release_checkpoint_buffers();
  const std::int64_t t = steps_++;
  if (zenflow::in_warm_up(z_, t)) return false;
  if (zenflow::is_selection_step(z_, t) || reselect_) select(grads);
  reselect_ = false;
  between();
  device_step(scalars(s, t - z_.full_warm_up_rounds + 1), grads);
  return true;
}

void ZenflowColumns::select(const DeviceBuffer& grads) {
  Stream& c = dev_.compute();
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    const OptimizerPart& p = ctx_.parts[i];
    for (ColumnRun& r : runs_[i]) {
      if (r.cols == 0) continue;
      const std::vector<double> importance = dev_.column_abs_sums(c, slot(grads, p).sub(r.offset, r.numel), r.first, r.cols);
      r.selected = zenflow::top_columns(importance, zenflow::columns_to_select(z_, r.cols));
    }
  }
  dev_.fill(c, dm_.span(), 0.0f);
  dev_.fill(c, dv_.span(), 0.0f);
}

void ZenflowColumns::device_step(const AdamStep& s, const DeviceBuffer& grads) {
  Stream& c = dev_.compute();
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    const OptimizerPart& p = ctx_.parts[i];
    for (const ColumnRun& r : runs_[i]) {
      const DeviceSpan params = p.params.sub(r.offset, r.numel), g = slot(grads, p).sub(r.offset, r.numel);
      const DeviceSpan dg = dg_.sub(r.device_offset, r.packed), dm = dm_.sub(r.device_offset, r.packed),
                       dv = dv_.sub(r.device_offset, r.packed), dp = dp_.sub(r.device_offset, r.packed);
      Segment seg = r.segment;
      seg.numel = r.packed;
      if (r.cols == 0) {
        dev_.copy(c, dg, g);
        if (!mixed()) {
          dev_.adam(c, s, {seg}, params, dg, dm, dv, {});
          continue;
        }
        dev_.convert(c, dp, params);  // the 16-bit parameters widened: Adam's master for this step
        dev_.adam(c, s, {seg}, dp, dg, dm, dv, params);
        continue;
      }
      dev_.gather_columns(c, dg, g, r.first, r.cols, r.selected);
      if (!mixed()) {
        dev_.gather_columns(c, dp, params, r.first, r.cols, r.selected);
        dev_.adam(c, s, {seg}, dp, dg, dm, dv, {});
        dev_.scatter_columns(c, params, dp, r.first, r.cols, r.selected);
        continue;
      }
      const DeviceSpan dp16 = dp16_.sub(r.device_offset, r.packed);
      dev_.gather_columns(c, dp16, params, r.first, r.cols, r.selected);
      dev_.convert(c, dp, dp16);
      dev_.adam(c, s, {seg}, dp, dg, dm, dv, dp16);
      dev_.scatter_columns(c, params, dp16, r.first, r.cols, r.selected);
    }
  }
  c.synchronize();
}

void ZenflowColumns::take(Stream& s, int part, std::size_t begin, const DeviceSpan& master) {
  const OptimizerPart& p = ctx_.parts.at(part);
  const std::size_t end = begin + master.size();
  for (const ColumnRun& r : runs_[part]) {
    const std::size_t lo = std::max(begin, r.offset), hi = std::min(end, r.offset + r.numel);
    if (lo >= hi) continue;
    const DeviceSpan params = p.params.sub(lo, hi - lo), into = master.sub(lo - begin, hi - lo);
    if (r.cols == 0) {
      if (mixed()) dev_.convert(s, into, params);
      else dev_.copy(s, into, params);
      continue;
    }
    // Through the run's packed buffer, at the place of the selected elements before `lo`.
    const std::size_t first = r.first + (lo - r.offset);
    const std::size_t before = zenflow::selected_in(r.first, lo - r.offset, r.cols, r.selected);
    const std::size_t n = zenflow::selected_in(first, hi - lo, r.cols, r.selected);
    const DeviceSpan packed = dp_.sub(r.device_offset + before, n);
    if (mixed()) {  // the 16-bit values, widened (exact): DeepSpeed's sync_fp32_param_from_gpu casts them so
      const DeviceSpan packed16 = dp16_.sub(r.device_offset + before, n);
      dev_.gather_columns(s, packed16, params, first, r.cols, r.selected);
      dev_.convert(s, packed, packed16);
    } else {
      dev_.gather_columns(s, packed, params, first, r.cols, r.selected);
    }
    dev_.scatter_columns(s, into, packed, first, r.cols, r.selected);
  }
}

}  // namespace zero
