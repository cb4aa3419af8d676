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

}  // namespace

// Runs unit u's forward or backward on the compute stream, with the views of the units it reads.
void Engine::run_unit(int u, bool backward) {
  const std::vector<int> read = layout_.units_read_by(u);
  std::vector<DeviceSpan> params, grads;
  for (int v : read) {
    params.push_back(stage_->params(v));
    grads.push_back(backward ? stage_->grads(v) : DeviceSpan());
  }
  TraceSpan span(config_.tracer, Lane::kCompute, cat(backward ? "backward " : "forward ", layout_.unit(u).name));
  device_->launch(device_->compute(), [&](const KernelMemory& mem) {
    UnitViews views(layout_);
    for (std::size_t i = 0; i < read.size(); ++i) views.set(read[i], mem.address(params[i]), backward ? mem.address(grads[i]) : nullptr);
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
