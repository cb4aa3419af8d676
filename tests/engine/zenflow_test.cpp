// ZenFlow (zero_optimization.zenflow, optimizer_zenflow.cpp): one rank's optimizer fed gradients
// against an independent NumPy model of DeepSpeed's rule (zenflow_reference.py); learning on the
// default text within the spread of plain offload over seeds, reproducible run to run; bad input.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "backends/registry.h"
#include "common/error.h"
#include "engine/optimizer.h"
#include "engine/text_run.h"

namespace zero {
namespace {

// The model the rule is checked on: one unit, a weight (6, 10) and its bias, on 2 ranks, so that
// rank 0's slice ends within row 3 and rank 1's starts there and holds the bias.
constexpr int kRows = 6, kCols = 10, kWorld = 2, kSteps = 12;

UnitSpec rule_unit() {
  return {"layer", {{"w", {kRows, kCols}, Init::normal(0.5f), true}, {"b", {kCols}, Init::normal(0.5f), false}}, {}};
}

struct RuleCase {
  ZenflowOptions z;
  int rank = 0;
  std::string device = "cpu";
};

void write_floats(const std::filesystem::path& file, const std::vector<float>& x) {
  std::ofstream out(file, std::ios::binary | std::ios::app);
  out.write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size() * sizeof(float)));
}

// The slice's parameters, read through a host-tier buffer.
std::vector<float> read_params(Device& dev, const DeviceSpan& params) {
  DeviceBuffer host = dev.alloc(Tier::kHost, Category::kOther, params.size(), "read back");
  dev.copy(dev.compute(), host.span(), params);
  dev.compute().synchronize();
  const auto* p = static_cast<const float*>(dev.transport(host.span()));
  return {p, p + params.size()};
}

// Feeds kSteps random gradients to rank c.rank's ZenFlow optimizer and writes what the reference
// reads into `dir`.
void run_rule(const RuleCase& c, const AdamConfig& adam, const std::filesystem::path& dir) {
  Ledger ledger;
  std::unique_ptr<Device> dev = make_device(c.device, ledger);
  FlatLayout layout({rule_unit()}, kWorld);
  const std::size_t slice = layout.unit(0).slice;
  DeviceBuffer params = dev->alloc(Tier::kDevice, Category::kParameters, slice, "parameters");
  const std::vector<Segment> segments = layout.slice_segments(0, c.rank);
  dev->init(dev->compute(), layout.unit(0), segments, 7, params.span());
  OptimizerContext ctx{layout, *dev, {OptimizerPart{0, params.span(), segments, 0, 0, slice}}};
  ctx.state_numel = slice;
  ctx.seed = 7;
  ctx.offload.optimizer = true;
  ctx.offload.zenflow = c.z;
  std::unique_ptr<ShardOptimizer> opt = make_optimizer(ctx);
  write_floats(dir / "initial.f32", read_params(*dev, params.span()));
  DeviceBuffer staged = dev->alloc(Tier::kHost, Category::kOther, slice, "gradient");
  DeviceBuffer reduced = dev->alloc(Tier::kDevice, Category::kGradients, slice, "reduced gradient");
  std::mt19937 rng(1000 + c.rank);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int t = 0; t < kSteps; ++t) {
    std::vector<float> g(slice);
    for (float& x : g) x = normal(rng);
    write_floats(dir / "grads.f32", g);
    std::copy(g.begin(), g.end(), static_cast<float*>(dev->transport(staged.span())));
    dev->copy(dev->compute(), reduced.span(), staged.span());
    opt->begin_micro_batch(true, true);
    opt->reduced(0, reduced.span(), Handle());
    opt->finish();
    opt->step(adam_step_scalars(adam, t + 1));
    write_floats(dir / "params.f32", read_params(*dev, params.span()));
  }
  opt->synchronize();
  write_floats(dir / "params.f32", read_params(*dev, params.span()));
  nlohmann::json meta = {{"rows", kRows}, {"cols", kCols}, {"begin", layout.slice_offset(0, c.rank)}, {"slice", slice},
                         {"world", kWorld}, {"steps", kSteps}, {"topk_ratio", c.z.topk_ratio},
                         {"full_warm_up_rounds", c.z.full_warm_up_rounds}, {"update_interval", c.z.update_interval},
                         {"select_interval", c.z.select_interval}, {"overlap_step", c.z.overlap_step}, {"lr", adam.lr},
                         {"beta1", adam.beta1}, {"beta2", adam.beta2}, {"eps", adam.eps}, {"weight_decay", adam.weight_decay}};
  std::ofstream(dir / "meta.json") << meta.dump();
}

// Warm-up or not, selection every interval or once, the CPU's update at once or overlapped; both
// ranks' slices; the CPU device and the strict one (the column operations through the device
// layer's host-staged fallback, as on a GPU).
TEST(ZenflowRule, MatchesANumPyModelOfDeepSpeedsRule) {
  AdamConfig adam;
  adam.lr = 1e-2f;
  adam.weight_decay = 0.1f;
  std::vector<RuleCase> cases;
  for (bool overlap : {false, true})
    for (int rank : {0, 1}) {
      RuleCase c;
      c.z = {true, 0.3, 4, 2, 2, overlap};  // topk 3 of 10 columns, select every 4 steps, update every 2, 2 warm-up steps
      c.rank = rank;
      cases.push_back(c);
      c.z = {true, 0.2, 0, 3, 0, overlap};  // select once, update every 3, no warm-up
      c.device = "strict";
      cases.push_back(c);
    }
  const std::filesystem::path root = std::filesystem::temp_directory_path() / cat("zero-zenflow-rule-", ::getpid());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::filesystem::path dir = root / std::to_string(i);
    std::filesystem::create_directories(dir);
    run_rule(cases[i], adam, dir);
    const std::string command = cat("/usr/bin/python3 ", ZERO_TEST_SOURCE_DIR, "/engine/zenflow_reference.py ", dir.string());
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
  if (!HasFailure()) std::filesystem::remove_all(root);  // kept for a look when it fails
}

}  // namespace
}  // namespace zero
