// The engine's narrow face for checkpoints: this rank's optimizer state (f32 masters, Adam's
// moments), read and written a range of one unit at a time through the device seam. The state
// stays where the placement keeps it: a host-tier span (offload) is copied host to host.
#include <algorithm>
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
  return {layout_.slice_offset(u, comm_.rank()), unit.slice};
}

DeviceSpan Engine::state_span(StateTensor tensor, int u, std::size_t first, std::size_t count) {
  if (config_.offload.delayed_update) {
    throw ConfigError("[checkpoint] the delayed update (offload_optimizer.delayed_update) keeps an update in flight "
                      "between steps, which checkpoints do not capture yet: turn it off to save or resume");
  }
  if (config_.precision.compute != Dtype::kF32) {
    throw ConfigError("[checkpoint] checkpoints of mixed-precision runs (bf16/fp16) are not supported yet: the 16-bit "
                      "parameters and the loss scale are not rebuilt on resume. Train in fp32 to save or resume");
  }
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

void Engine::read_state(StateTensor tensor, int u, std::size_t first, std::span<float> out) {
  if (out.empty()) return;
  const DeviceSpan src = state_span(tensor, u, first, out.size());
  const DeviceSpan staged = state_staging_->sub(0, out.size());
  device_->copy(device_->compute(), staged, src);
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
  device_->copy(device_->compute(), dst, staged);
}

void Engine::state_written(std::int64_t steps_done) {
  ZERO_CHECK(micro_batches_ == 0, "checkpoint loaded in the middle of gradient accumulation");
  ZERO_CHECK(steps_done >= 0, "steps_done ", steps_done);
  stage_->wait_parameter_gathers();  // the last step's gathers read the slices written next
  optimizer_->state_written(steps_done);
  stage_->gather_parameters();
  step_ = steps_done;
  applied_ = steps_done;  // fp32 only (state_span refuses mixed precision): no step was skipped
  skipped_ = 0;
  state_staging_.reset();
}

}  // namespace zero
