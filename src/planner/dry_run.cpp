#include "planner/dry_run.h"

#include <algorithm>

#include "backends/facts.h"
#include "comm/communicator.h"
#include "engine/engine.h"

namespace zero::planner_detail {
namespace {

// A model of units alone: its kernels never run (the counting device launches nothing), so only
// its units and its activations, held in the ledger for its lifetime as a real model holds
// them, are real.
class ShapeModule final : public Module {
 public:
  ShapeModule(std::vector<UnitSpec> units, const ActivationBytes& activations, Ledger& ledger)
      : units_(std::move(units)), activations_(activations), ledger_(ledger) {
    if (activations_.device > 0) ledger_.on_alloc(Tier::kDevice, Category::kActivations, activations_.device, "activations");
    if (activations_.host > 0) ledger_.on_alloc(Tier::kHost, Category::kActivations, activations_.host, "kept activations");
  }
  ~ShapeModule() override {
    if (activations_.device > 0) ledger_.on_free(Tier::kDevice, Category::kActivations, activations_.device);
    if (activations_.host > 0) ledger_.on_free(Tier::kHost, Category::kActivations, activations_.host);
  }
  std::vector<UnitSpec> units() const override { return units_; }
  void forward(int, const UnitViews&) override {}
  void backward(int, const UnitViews&) override {}
  float loss() const override { return 0.0f; }

 private:
  std::vector<UnitSpec> units_;
  ActivationBytes activations_;
  Ledger& ledger_;
};

// The settings as given, on the counting device. The delayed update runs from the first step,
// whatever its warm-up: the second step, the one planned, is then the steady state.
EngineConfig engine_config(const EngineSettings& settings) {
  EngineConfig c;
  static_cast<EngineSettings&>(c) = settings;
  c.offload.warmup_steps = 0;
  c.device = planner_device();
  return c;
}

TierBytes bytes_of(const std::array<std::uint64_t, kNumCategories>& by_category) {
  TierBytes t;
  t.bytes = by_category;
  return t;
}

}  // namespace

DryRun run_dry(const PlanInput& in, const ActivationBytes& activations) {
  Ledger ledger;
  ShapeModule model(in.model.units, activations, ledger);
  // One rank runs the self backend, which has no transport scratch, whatever was asked.
  auto comm = make_counting_communicator(in.ranks, in.comm_scratch && in.ranks > 1, {}, in.ranks_per_node);
  Engine engine(engine_config(in.settings), model, *comm, ledger);

  DryRun out;
  out.persistent_device = bytes_of(ledger.usage(Tier::kDevice).current);
  out.persistent_device[Category::kActivations] = 0;
  for (int step = 0; step < 2; ++step) {  // the second step is the steady state
    for (int m = 0; m < in.gradient_accumulation_steps; ++m) engine.forward_backward(m + 1 == in.gradient_accumulation_steps);
    engine.step();
  }
  out.device = bytes_of(ledger.usage(Tier::kDevice).at_peak);
  out.host = bytes_of(ledger.usage(Tier::kHost).at_peak);
  out.nvme = bytes_of(ledger.usage(Tier::kNvme).at_peak);
  const Traffic t = engine.last_step_traffic();
  out.traffic.sent = t.sent;
  out.traffic.sent_across = t.sent_across;
  out.traffic.calls = t.calls;
  out.to_host = engine.last_step_to_host();
  out.to_device = engine.last_step_to_device();
  out.disk_read = engine.last_step_disk_read();
  out.disk_written = engine.last_step_disk_written();
  out.param_disk_read = engine.last_step_param_disk_read();
  return out;
}

}  // namespace zero::planner_detail
