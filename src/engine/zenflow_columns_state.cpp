// ZenflowColumns in checkpoints: the device's state, packed by selected column, unpacked to the
// part's layout so that a checkpoint holds it as it holds every other tensor (one f32 per element).
#include <algorithm>

#include "common/error.h"
#include "engine/zenflow.h"
#include "engine/zenflow_columns.h"

namespace zero {

namespace {

std::size_t largest_part(const std::vector<OptimizerPart>& parts) {
  std::size_t n = 0;
  for (const OptimizerPart& p : parts) n = std::max(n, p.params.size());
  return n;
}

}  // namespace

DeviceSpan ZenflowColumns::state(int part, StateTensor tensor) {
  const std::size_t n = ctx_.parts.at(part).params.size();
  if (tensor == StateTensor::kZenflowSelected) {
    if (mask_.empty()) mask_ = dev_.alloc(Tier::kHost, Category::kOther, largest_part(ctx_.parts), "ZenFlow's columns (checkpoint)");
    auto* mask = static_cast<float*>(dev_.transport(mask_.span()));
    std::fill(mask, mask + n, 0.0f);
    for (const ColumnRun& r : runs_[part]) {
      if (r.cols == 0) std::fill(mask + r.offset, mask + r.offset + r.numel, 1.0f);
      for (std::size_t row = 0; r.cols != 0 && row < r.numel / r.cols; ++row) {
        for (std::uint32_t c : r.selected) mask[r.offset + row * r.cols + c] = 1.0f;
      }
    }
    return mask_.sub(0, n);
  }
  ZERO_CHECK(tensor == StateTensor::kZenflowExpAvg || tensor == StateTensor::kZenflowExpAvgSq, "ZenFlow state tensor ",
             static_cast<int>(tensor));
  if (unpacked_.empty()) {
    unpacked_ = dev_.alloc(Tier::kDevice, Category::kOther, largest_part(ctx_.parts), "ZenFlow's moments, unpacked (checkpoint)");
  }
  const DeviceBuffer& moment = tensor == StateTensor::kZenflowExpAvg ? dm_ : dv_;
  Stream& c = dev_.compute();
  dev_.fill(c, unpacked_.sub(0, n), 0.0f);
  for (const ColumnRun& r : runs_[part]) {
    const DeviceSpan packed = moment.sub(r.device_offset, r.packed), whole = unpacked_.sub(r.offset, r.numel);
    if (r.cols == 0) dev_.copy(c, whole, packed);
    else if (!r.selected.empty()) dev_.scatter_columns(c, whole, packed, r.first, r.cols, r.selected);
  }
  c.synchronize();
  return unpacked_.sub(0, n);
}

void ZenflowColumns::state_changed(int part, StateTensor tensor) {
  if (tensor == StateTensor::kZenflowSelected) {
    const auto* mask = static_cast<const float*>(dev_.transport(mask_.span()));
    for (ColumnRun& r : runs_[part]) {
      if (r.cols == 0) continue;
      r.selected.clear();
      for (std::size_t c = 0; c < r.cols; ++c) {
        if (mask[r.offset + c] != 0.0f) r.selected.push_back(static_cast<std::uint32_t>(c));
      }
      // Every row the same k columns, k the options' (or none: saved before the first selection).
      bool same = r.selected.empty() || r.selected.size() == zenflow::columns_to_select(z_, r.cols);
      for (std::size_t e = r.cols; same && e < r.numel; ++e) same = mask[r.offset + e] == mask[r.offset + e % r.cols];
      if (!same) {
        throw ConfigError(cat("[checkpoint] ZenFlow's columns of unit ", ctx_.parts[part].unit, " (zenflow_selected) are not ",
                                  zenflow::columns_to_select(z_, r.cols), " of ", r.cols, " alike in every row: the checkpoint was saved ",
                                  "with other zenflow options or is damaged; resume with the zenflow section it was saved with"));
      }
    }
    return;
  }
  const DeviceBuffer& moment = tensor == StateTensor::kZenflowExpAvg ? dm_ : dv_;
  Stream& c = dev_.compute();
  for (const ColumnRun& r : runs_[part]) {
    const DeviceSpan packed = moment.sub(r.device_offset, r.packed), whole = unpacked_.sub(r.offset, r.numel);
    if (r.cols == 0) dev_.copy(c, packed, whole);
    else if (!r.selected.empty()) dev_.gather_columns(c, packed, whole, r.first, r.cols, r.selected);
  }
  c.synchronize();
}

void ZenflowColumns::release_checkpoint_buffers() {
  mask_.reset();
  unpacked_.reset();
}

void ZenflowColumns::restore(std::int64_t steps, bool fresh) {
  steps_ = steps;
  reselect_ = fresh && !zenflow::in_warm_up(z_, steps);
  if (fresh) {
    for (std::vector<ColumnRun>& runs : runs_)
      for (ColumnRun& r : runs) r.selected.clear();
    dev_.fill(dev_.compute(), dm_.span(), 0.0f);
    dev_.fill(dev_.compute(), dv_.span(), 0.0f);
    dev_.compute().synchronize();
  }
  release_checkpoint_buffers();
}

}  // namespace zero
