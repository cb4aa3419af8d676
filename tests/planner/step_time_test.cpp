// The step-time model (planner/step_time.h): its FLOPs against Megatron-LM's published formula,
// its overlap rules at the limits (all hidden, all exposed), the stages' ordering, and what it
// refuses. The published runs themselves are checked from docs/estimate.md (step_time_papers.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "planner/advisor.h"
#include "planner/step_time.h"

namespace zero {
namespace {

PlanInput gpt_input(int channels, int layers, int ranks, int per_node) {
  PlanInput in;
  in.model = describe_gpt(GptShape{50257, 1024, channels, layers, channels / 64});
  in.ranks = ranks;
  in.ranks_per_node = per_node;
  in.micro_batch = 8;
  in.activation_bytes = nullptr;  // no activations: the plans here are for traffic only
  return in;
}

const Plan& labelled(const std::vector<Plan>& plans, const std::string& label) {
  return *std::find_if(plans.begin(), plans.end(), [&](const Plan& p) { return p.label == label; });
}

Machine v100_like() {
  Machine m;
  m.peak_flops = 125e12;
  m.achieved_fraction = 0.3;
  m.memory_bandwidth = 900e9;
  m.intra_node_bandwidth = 150e9;
  m.inter_node_bandwidth = 100e9;
  m.host_memory_bandwidth = 256e9;
  return m;
}

// Megatron-LM (Narayanan et al. 2021, eq. 3) counts 96 B s l h^2 (1 + s/6h + V/16lh) FLOPs per
// iteration with activation recomputation: per token 96 l h^2 + 16 l h s + 6 V h. Ours adds the
// biases, LayerNorms and position embeddings, a fraction of a percent at these sizes.
TEST(StepTime, FlopsPerTokenAreMegatronsWithRecomputation) {
  for (auto [h, l] : {std::pair{4096, 50}, std::pair{8192, 125}, std::pair{1600, 48}}) {
    const ModelDescription m = describe_gpt(GptShape{50257, 1024, h, l, 32});
    const double megatron = 96.0 * l * h * h + 16.0 * l * h * 1024 + 6.0 * 50257 * h;
    EXPECT_NEAR(flops_per_token(m, true) / megatron, 1.0, 0.003) << h;
    // Without recomputation: 3/4 of the block and attention terms, the head unchanged.
    const double plain = 72.0 * l * h * h + 12.0 * l * h * 1024 + 6.0 * 50257 * h;
    EXPECT_NEAR(flops_per_token(m, false) / plain, 1.0, 0.003) << h;
  }
  EXPECT_EQ(flops_per_token(describe_counts(1'000'000, 100'000), false), 0) << "no shape, no FLOPs";
}

// One device alone: the step is its compute (and Adam at memory speed); TFLOP/s = peak x fraction.
TEST(StepTime, OneDeviceRunsAtItsAchievedFraction) {
  const PlanInput in = gpt_input(1024, 4, 1, 1);
  Machine m = v100_like();
  m.memory_bandwidth = 0;  // Adam not counted
  const StepTime t = predict_step_time(in, labelled(plan_all(in, 0), "0"), m);
  EXPECT_EQ(t.comm, 0);
  EXPECT_EQ(t.step, t.compute);
  EXPECT_NEAR(t.tflops_per_device, 125 * 0.3, 1e-9);
  EXPECT_NEAR(t.tokens_per_second, t.tokens_per_step / t.step, 1e-9);
}

// With links fast enough, the engine's overlap hides all but the largest unit's reduction;
// with a slow one, all of the reduction beyond backward shows. Stage 3 moves at least 1.5x stage 2's bytes.
TEST(StepTime, ReductionsHideBehindBackwardUntilTheyOutlastIt) {
  const PlanInput in = gpt_input(2048, 8, 16, 8);
  const std::vector<Plan> plans = plan_all(in, std::nullopt);
  Machine fast = v100_like(), slow = v100_like();
  slow.inter_node_bandwidth = 1e8;
  for (const char* label : {"0", "1", "2"}) {
    const Plan& p = labelled(plans, label);
    const StepTime f = predict_step_time(in, p, fast), s = predict_step_time(in, p, slow);
    const double share = static_cast<double>(p.largest_unit) / p.padded_numel;
    EXPECT_LT(f.comm, f.compute) << label;
    EXPECT_NEAR(f.comm_exposed, f.comm * share, 1e-9 * f.comm) << label << ": only the largest unit's share shows";
    EXPECT_GT(s.comm, 3 * s.compute) << label;
    EXPECT_GE(s.comm_exposed, s.comm - s.compute - 1e-9 * s.comm) << label << ": everything beyond the compute shows";
    EXPECT_LE(s.comm_exposed, s.comm) << label;
  }
  Machine shared = fast;
  shared.comm_on_compute_cores = true;
  const StepTime cpu = predict_step_time(in, labelled(plans, "2"), shared);
  EXPECT_EQ(cpu.comm_exposed, cpu.comm) << "collectives on the compute cores overlap nothing";
  const Plan &p2 = labelled(plans, "2"), &p3 = labelled(plans, "3");
  const StepTime s2 = predict_step_time(in, p2, slow), s3 = predict_step_time(in, p3, slow);
  const double bytes = static_cast<double>(p3.traffic.total()) / p2.traffic.total();
  EXPECT_GE(bytes, 1.5) << "stage 3 gathers the parameters again for backward (and the tied head its embedding)";
  EXPECT_NEAR(s3.comm / s2.comm, bytes, 0.01 * bytes) << "on a slow link the time is the bytes'";
  EXPECT_GT(s3.step, s2.step);
}

// Offload: CPU Adam at the host's memory bandwidth (28 bytes per element, shared by the node's
// devices) and the link's copies; with clipping Adam waits for the step, so it all shows.
TEST(StepTime, OffloadAddsHostAdamAndTheLink) {
  PlanInput in = gpt_input(2048, 8, 1, 1);
  in.settings.gradient_clipping = 1.0f;
  const Plan& p = labelled(plan_all(in, 2), "2+opt");
  const StepTime t = predict_step_time(in, p, v100_like());
  const double adam = p.shard_numel * 28.0 / 256e9, up = p.host_to_device_bytes / in.link_bandwidth;
  EXPECT_NEAR(t.optimizer, adam + up, 1e-9 * t.optimizer);
  in.settings.gradient_clipping = 0;  // Adam per unit as gradients land, under backward
  EXPECT_LT(predict_step_time(in, labelled(plan_all(in, 2), "2+opt"), v100_like()).optimizer, t.optimizer / 4);
}

TEST(StepTime, SaysWhatIsMissing) {
  const PlanInput two_nodes = gpt_input(1024, 4, 16, 8);
  const Plan& p = labelled(plan_all(two_nodes, 2), "2");
  Machine m = v100_like();
  m.inter_node_bandwidth = 0;
  EXPECT_EQ(step_time_missing(two_nodes, p, m), "the inter-node bandwidth");
  EXPECT_THROW(predict_step_time(two_nodes, p, m), ConfigError);
  m = v100_like();
  m.achieved_fraction = 0;
  EXPECT_NE(step_time_missing(two_nodes, p, m).find("fraction"), std::string::npos);
  PlanInput counts = two_nodes;
  counts.model = describe_counts(1'000'000'000, 50'000'000);
  EXPECT_NE(step_time_missing(counts, labelled(plan_all(counts, 2), "2"), v100_like()).find("shape"), std::string::npos);
}

}  // namespace
}  // namespace zero
