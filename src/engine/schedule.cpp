// The step's schedule: units forward first to last, backward last to first. Before a unit runs,
// it and the units it borrows are fetched (stage 3 gathers them; stages 1 and 2 wait for the
// unit's all-gather from the last step), and the stage is told where in the order of use the
// step is (stage.h: use_position), so that stage 3 gathers what comes next meanwhile. A unit's gradient is
// reduced as soon as the last unit that reads it has run backward; the reduction overlaps the
// backward of the units before it. The model runs as a kernel on the device's compute stream.
#include "common/error.h"
#include "common/trace.h"
#include "engine/engine.h"
#include "engine/stage.h"

namespace zero {
namespace {

// The units a unit reads, fetched (made whole) for as long as this lives, released even when
// the model throws, so no unit stays marked as whole with stale contents.
class UnitsInUse {
 public:
  UnitsInUse(Stage& stage, std::vector<int> units) : stage_(stage), units_(std::move(units)) {
    for (int v : units_) {
      stage_.fetch(v);
      ++fetched_;
    }
  }
  ~UnitsInUse() {
    for (int i = 0; i < fetched_; ++i) stage_.release(units_[i]);
  }
  UnitsInUse(const UnitsInUse&) = delete;
  UnitsInUse& operator=(const UnitsInUse&) = delete;

 private:
  Stage& stage_;
  std::vector<int> units_;
  int fetched_ = 0;
};

// Widens unit v's 16-bit parameters into f32 `wide` for the kernels on the compute stream, all
// but those the model reads in bf16 as they are (Module::reads_bf16), whose part of `wide` stays
// unwritten (never read: the products take those weights in bf16).
void widen_for_compute(Device& dev, const Module& module, int v, const UnitPlace& place, DeviceSpan wide, DeviceSpan params) {
  std::vector<bool> kept(place.params.size(), false);
  bool all = true;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    kept[i] = params.dtype() == Dtype::kBf16 && module.reads_bf16(v, static_cast<int>(i));
    all = all && !kept[i];
  }
  if (all) return dev.convert(dev.compute(), wide, params);
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (kept[i]) continue;
    const ParamPlace& p = place.params[i];
    dev.convert(dev.compute(), wide.sub(p.offset, p.numel), params.sub(p.offset, p.numel));
  }
}

}  // namespace

// Runs unit u's forward or backward on the compute stream, with the views of the units it reads.
//
// Mixed precision: the CPU models compute in f32, so a 16-bit unit is widened into f32 compute
// scratch (category activations) for the kernel, and backward's gradients are computed into
// zeroed f32 scratch, multiplied by the loss scale (fp16; the same as scaling the loss, since the
// scale is a power of two and backward is linear in it), and added into the 16-bit gradient
// accumulator with one rounding. Parameters and gradients stay 16-bit between kernels. A bf16
// unit is also handed to the kernels as it is: the linear layers' bf16 products read their
// weights from it (those are not widened: Module::reads_bf16), which gives the bits the widened
// copy would, since the products round their operands to bf16 anyway.
void Engine::run_unit(int u, bool backward) {
  const std::vector<int> read = layout_.units_read_by(u);
  std::vector<DeviceSpan> params, grads, params_bf16;
  for (int v : read) {
    params.push_back(stage_->params(v));
    grads.push_back(backward ? stage_->grads(v) : DeviceSpan());
    params_bf16.push_back(params.back().dtype() == Dtype::kBf16 ? params.back() : DeviceSpan());
  }
  if (!config_.precision.mixed()) {
    run_kernel(u, backward, params, grads, params_bf16);
    return;
  }
  Device& dev = *device_;
  std::vector<DeviceBuffer> scratch;  // f32 copies: params of each read unit, then (backward) their gradients
  std::vector<DeviceSpan> wide_params, wide_grads;
  for (std::size_t i = 0; i < read.size(); ++i) {
    scratch.push_back(dev.alloc(Tier::kDevice, Category::kActivations, params[i].size(), "f32 parameters for compute", Dtype::kF32, false));
    widen_for_compute(dev, module_, read[i], layout_.unit(read[i]), scratch.back().span(), params[i]);
    wide_params.push_back(scratch.back().span());
    if (backward) {
      scratch.push_back(dev.alloc(Tier::kDevice, Category::kActivations, grads[i].size(), "f32 gradients for compute"));
      wide_grads.push_back(scratch.back().span());
    } else {
      wide_grads.emplace_back();
    }
  }
  run_kernel(u, backward, wide_params, wide_grads, params_bf16);
  if (!backward) return;
  const float scale = loss_scale();
  for (std::size_t i = 0; i < read.size(); ++i) {
    if (scale != 1.0f) dev.scale(dev.compute(), wide_grads[i], scale);
    dev.add(dev.compute(), grads[i], wide_grads[i]);
  }
}

void Engine::run_kernel(int u, bool backward, const std::vector<DeviceSpan>& params, const std::vector<DeviceSpan>& grads,
                        const std::vector<DeviceSpan>& params_bf16) {
  const std::vector<int> read = layout_.units_read_by(u);
  TraceSpan span(config_.tracer, Lane::kCompute, cat(backward ? "backward " : "forward ", layout_.unit(u).name));
  device_->launch(device_->compute(), [&](const KernelMemory& mem) {
    UnitViews views(layout_);
    views.set_stream(mem.stream_handle());
    for (std::size_t i = 0; i < read.size(); ++i) {
      const std::uint16_t* own = params_bf16[i].empty() ? nullptr : mem.address_bf16(params_bf16[i]);
      views.set(read[i], mem.address(params[i]), backward ? mem.address(grads[i]) : nullptr, own);
    }
    if (backward) module_.backward(u, views);
    else module_.forward(u, views);
  });
}

void Engine::forward() {
  const int units = layout_.num_units();
  for (int u = 0; u < units; ++u) {
    const UnitsInUse in_use(*stage_, layout_.units_read_by(u));
    stage_->in_use(use_position(layout_, u, false));
    run_unit(u, false);
  }
}

void Engine::backward() {
  for (int u = layout_.num_units() - 1; u >= 0; --u) {
    const auto read = layout_.units_read_by(u);
    {
      const UnitsInUse in_use(*stage_, read);
      stage_->in_use(use_position(layout_, u, true));
      run_unit(u, true);
    }
    for (int v : read)
      if (layout_.gradient_ready_after(v) == u) stage_->reduce_gradients(v);
  }
}

}  // namespace zero
