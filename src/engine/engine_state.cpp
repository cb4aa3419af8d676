// The engine's narrow face for checkpoints: this rank's optimizer state (f32 masters, Adam's
// moments), read and written a range of one unit at a time through the device seam. The state
// stays where the placement keeps it: a host-tier span (offload) is copied host to host.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "engine/engine.h"
#include "engine/optimizer.h"
#include "engine/stage.h"

namespace zero {

// A part is either the whole unit (stage 0: every rank updates everything) or this rank's slice.
Engine::HeldRange Engine::held_state(int u) const {
  const UnitPlace& unit = layout_.unit(u);
  const std::size_t part = optimizer_->state(u, StateTensor::kMaster).size();
  if (part == unit.padded) return {0, unit.padded};
  ZERO_CHECK(part == unit.slice, "optimizer part of unit ", u, " has ", part, " elements");
  return {layout_.slice_offset(u, shards_->rank()), unit.slice};
}

DeviceSpan Engine::state_span(StateTensor tensor, int u, std::size_t first, std::size_t count) {
  const HeldRange held = held_state(u);
  ZERO_CHECK(first >= held.first && first + count <= held.first + held.count, "state [", first, ", ", first + count,
             ") of unit ", u, " outside the held [", held.first, ", ", held.first + held.count, ")");
  if (!state_staging_ || state_staging_->size() < count) {
    std::size_t largest = 0;
    for (int v = 0; v < layout_.num_units(); ++v) largest = std::max(largest, held_state(v).count);
    state_staging_ = std::make_unique<DeviceBuffer>(
        device_->alloc(Tier::kHost, Category::kOther, largest, "checkpoint staging", Dtype::kF32, false));
  }
  return optimizer_->state(u, tensor).sub(first - held.first, count);
}

// The f32 state is copied; the parameters in use (compute dtype) are widened on the way out and
// narrowed on the way in (exact: they were 16-bit values).
void Engine::read_state(StateTensor tensor, int u, std::size_t first, std::span<float> out) {
  if (out.empty()) return;
  const DeviceSpan src = state_span(tensor, u, first, out.size());
  const DeviceSpan staged = state_staging_->sub(0, out.size());
  if (src.dtype() == Dtype::kF32) device_->copy(device_->compute(), staged, src);
  else device_->convert(device_->compute(), staged, src);
  device_->compute().synchronize();
  const auto* view = static_cast<const float*>(device_->transport(staged));
  std::memcpy(out.data(), view, out.size_bytes());
}

void Engine::write_state(StateTensor tensor, int u, std::size_t first, std::span<const float> in) {
  if (in.empty()) return;
  stage_->wait_parameter_gathers();  // the masters may be the slices the last step's gathers read
  const DeviceSpan dst = state_span(tensor, u, first, in.size());
  const DeviceSpan staged = state_staging_->sub(0, in.size());
  auto* view = static_cast<float*>(device_->transport(staged));
  std::memcpy(view, in.data(), in.size_bytes());
  if (dst.dtype() == Dtype::kF32) device_->copy(device_->compute(), dst, staged);
  else device_->convert(device_->compute(), dst, staged);
  device_->compute().synchronize();
  optimizer_->state_changed(u, tensor);
}

bool Engine::parameters_finite() {
  counters();  // the delayed update's Adam has written the masters
  std::uint8_t mine = 1;
  std::vector<float> part;
  for (int u = 0; u < layout_.num_units() && mine; ++u) {
    const HeldRange held = held_state(u);
    part.resize(held.count);
    read_state(StateTensor::kMaster, u, held.first, part);
    mine = std::all_of(part.begin(), part.end(), [](float x) { return std::isfinite(x); }) ? 1 : 0;
  }
  std::vector<std::uint8_t> all(comm_.size());
  comm_.all_gather_bytes(&mine, 1, all.data());
  return std::all_of(all.begin(), all.end(), [](std::uint8_t f) { return f != 0; });
}

EngineCounters Engine::counters() {
  EngineCounters c;
  c.steps_done = step_;
  c.skipped_steps = skipped_;
  if (scaler_) c.loss_scaler = scaler_->state();
  c.update_in_flight = optimizer_->update_in_flight();
  c.zenflow = optimizer_->zenflow_counters();
  return c;
}

bool Engine::holds_update_in_flight(std::int64_t steps_done) const {
  return config_.offload.delayed_update && steps_done + 1 > config_.offload.warmup_steps;
}

void Engine::state_written(const EngineCounters& c) {
  ZERO_CHECK(micro_batches_ == 0, "checkpoint loaded in the middle of gradient accumulation");
  ZERO_CHECK(c.steps_done >= 0 && c.skipped_steps >= 0 && c.skipped_steps <= c.steps_done, "steps_done ", c.steps_done,
             ", skipped ", c.skipped_steps);
  ZERO_CHECK(!c.update_in_flight || holds_update_in_flight(c.steps_done), "an update in flight this engine cannot hold");
  if (scaler_ && c.loss_scaler) scaler_->restore(*c.loss_scaler);
  stage_->wait_parameter_gathers();  // the last step's gathers read the slices written next
  optimizer_->restore_zenflow(c.zenflow);
  optimizer_->state_written(c.steps_done, c.update_in_flight || c.zenflow.has_value());  // ZenFlow's: kParamsInUse written
  stage_->gather_parameters();
  step_ = c.steps_done;
  skipped_ = c.skipped_steps;
  applied_ = c.steps_done - c.skipped_steps;  // Adam's step count: the steps whose update was applied
  optimizer_->set_steps_applied(applied_);
  state_staging_.reset();
}

}  // namespace zero
