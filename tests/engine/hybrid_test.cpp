// Hybrid sharding (zero_optimization.mics_shard_size) and traffic by link, on thread ranks
// arranged as nodes (ThreadWorld's ranks per node).
//
// Bytes: every rank's measured bytes per step, in all and across nodes, equal what the test
// counts itself peer by peer from the algorithm (each collective hands every peer its slice):
// stage 3 moves 3 slices of P/N per unit to each of the N-1 peers (two all-gathers, one
// reduce-scatter); hybrid sharding in groups of G moves 3 slices of P/G to each of the G-1 peers
// of its group and all-reduces its P/G across the R = N/G replicas (2 pieces of P/N to each of
// the R-1 others). P: the padded parameters, f32.
//
// Bits: hybrid sharding sums a gradient in two levels, (g0+g1)+(g2+g3) for G = 2 on 4 ranks,
// where stages 0-3 sum ((g0+g1)+g2)+g3 in rank order; float addition is not associative, so it
// cannot give stage 3's bits unless the cross-group step sent every rank's unreduced gradient
// (stage 3's traffic, not hybrid's). What holds exactly: G = N and G = 1 (one level of rank-order
// sum: the group's or the replicas') give stage 3's bits; any G gives the same bits twice; and
// G = 2 stays within the spread that reordering the same sum (permuting which rank trains which
// rows) makes in stage 3 itself.
#include <gtest/gtest.h>

#include "common/sha256.h"
#include "engine/mlp_run.h"

namespace zero::testing {
namespace {

struct Expected {
  std::uint64_t sent = 0, across = 0;
};

// The bytes rank r sends per step, counted over its peers: `slices_to_group` elements to each
// peer of its group of g consecutive ranks, `slices_to_replicas` to each of its replicas (the
// ranks of its index in the other groups); a peer is across when on another node of
// ranks_per_node consecutive ranks.
Expected count_peers(int r, int n, int g, int ranks_per_node, std::uint64_t to_group, std::uint64_t to_replica) {
  Expected e;
  const auto node = [&](int x) { return x / ranks_per_node; };
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    const bool same_group = p / g == r / g, replica = p % g == r % g;
    const std::uint64_t bytes = same_group ? to_group : replica ? to_replica : 0;
    e.sent += bytes;
    if (node(p) != node(r)) e.across += bytes;
  }
  return e;
}

// Stage 3, shard groups of g (g = n: plain stage 3), one micro-batch, no persistence: per unit
// two all-gathers and one reduce-scatter in the group, then the replicas' all-reduce.
Expected expected_bytes(int r, int n, int g, int ranks_per_node, std::uint64_t padded) {
  const std::uint64_t f32 = 4;
  const std::uint64_t to_group = 3 * padded / g * f32;
  const std::uint64_t to_replica = 2 * padded / n * f32;  // reduce-scatter + all-gather of (P/g)/(n/g)
  return count_peers(r, n, g, ranks_per_node, to_group, to_replica);
}

MlpRun stage3_run(int n, int g, int ranks_per_node, int steps = 3) {
  MlpRun run;
  run.stage = 3;
  run.steps = steps;
  run.global_batch = 24;
  run.mics_shard_size = g == n ? -1 : g;
  run.ranks_per_node = ranks_per_node;
  return run;
}

TEST(Hybrid, BytesPerLinkEqualTheCountOverPeers) {
  struct Case {
    int n, g, per_node;
  };
  const std::vector<Case> cases = {{4, 4, 2}, {4, 2, 2}, {4, 1, 2}, {8, 8, 4}, {8, 8, 2}, {8, 2, 4}, {8, 4, 4}, {8, 4, 2}, {8, 2, 2}};
  for (const Case& c : cases) {
    const std::vector<RankResult> results = run_threads(stage3_run(c.n, c.g, c.per_node), c.n);
    for (int r = 0; r < c.n; ++r) {
      const Traffic& t = results[r].step_traffic;
      const Expected e = expected_bytes(r, c.n, c.g, c.per_node, results[r].padded);
      const std::string what = cat("N=", c.n, " G=", c.g, " ranks per node ", c.per_node, " rank ", r);
      EXPECT_EQ(t.total_sent(), e.sent) << what;
      EXPECT_EQ(t.total_sent_across(), e.across) << what;
      EXPECT_EQ(t.total_received(), e.sent) << what;  // every peer sends back as much
    }
  }
}

// Stage 3 at N ranks: the formula 3P(N-1)/N, and across nodes the share (N-L)/(N-1) of it.
TEST(Hybrid, Stage3AcrossNodesIsTheShareOfPeersOffTheNode) {
  const int n = 8, per_node = 2;
  const std::vector<RankResult> results = run_threads(stage3_run(n, n, per_node), n);
  const std::uint64_t p = results[0].padded * 4;
  EXPECT_EQ(results[0].step_traffic.total_sent(), 3 * p * (n - 1) / n);
  EXPECT_EQ(results[0].step_traffic.total_sent_across(), 3 * p * (n - per_node) / n);
}

// The ledger's model state per rank after a step: the stage formulas (f32: 4 bytes of
// parameters, 4 of gradients, 8 of Adam's moments per element) with G in place of N.
TEST(Hybrid, ModelStatePerRankFollowsTheFormulasWithTheGroupSize) {
  const int n = 4;
  for (int g : {1, 2, 4}) {
    for (int stage = 1; stage <= 3; ++stage) {
      MlpRun run = stage3_run(n, g, 2, 1);
      run.stage = stage;
      run.mics_shard_size = g;
      const RankResult r = run_threads(run, n)[1];
      const std::uint64_t p = r.padded * 4, shard = p / g;
      const std::uint64_t params = stage == 3 ? shard : p, grads = stage == 1 ? p : shard;
      const std::string what = cat("stage ", stage, " G=", g);
      EXPECT_EQ(r.device.current[static_cast<int>(Category::kParameters)], params) << what;
      EXPECT_EQ(r.device.current[static_cast<int>(Category::kGradients)], grads) << what;
      EXPECT_EQ(r.device.current[static_cast<int>(Category::kOptimizerState)], 2 * shard) << what;
    }
  }
}

std::string digest(const std::vector<float>& params) { return sha256_hex(params.data(), params.size() * sizeof(float)); }

TEST(Hybrid, SameBitsAsStage3AtGroupOfOneOrAllReproducibleAndWithOffload) {
  const int n = 4;
  const std::vector<float> stage3 = run_threads(stage3_run(n, n, 2), n)[0].params;
  for (int g : {1, 4}) {
    MlpRun run = stage3_run(n, g, 2);
    run.mics_shard_size = g;  // set even at G = N: the key's own path
    EXPECT_TRUE(same_bits(run_threads(run, n)[0].params, stage3)) << "G=" << g;
  }
  for (int stage = 1; stage <= 3; ++stage) {
    MlpRun run = stage3_run(n, 2, 2);
    run.stage = stage;
    const std::vector<RankResult> a = run_threads(run, n), b = run_threads(run, n);
    for (int r = 1; r < n; ++r) EXPECT_TRUE(same_bits(a[r].params, a[0].params)) << "stage " << stage << " rank " << r;
    EXPECT_EQ(digest(a[0].params), digest(b[0].params)) << "stage " << stage;
    run.offload.optimizer = true;  // the placement changes no bit, as without groups
    EXPECT_TRUE(same_bits(run_threads(run, n)[0].params, a[0].params)) << "stage " << stage << " with offload";
  }
}

// The tolerance is the spread of stage 3 itself under reordered sums: the same rows trained by
// other ranks (so summed in another order) after the same steps.
TEST(Hybrid, WithinTheSpreadOfReorderedSumsOfStage3) {
  const int n = 4;
  const MlpShape shape;
  const int steps = 10;
  const std::vector<float> stage3 = run_threads(stage3_run(n, n, 2, steps), n)[0].params;
  double spread = 0;
  for (const std::vector<int>& order : {std::vector<int>{3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}}) {
    MlpRun run = stage3_run(n, n, 2, steps);
    run.rows_of_rank = order;
    spread = std::max(spread, worst_tensor_difference(Mlp(shape).units(), run_threads(run, n)[0].params, stage3));
  }
  ASSERT_GT(spread, 0.0) << "reordering the sums changed no bit: no spread to measure the tolerance from";
  for (int stage = 1; stage <= 3; ++stage) {
    MlpRun run = stage3_run(n, 2, 2, steps);
    run.stage = stage;
    const double diff = worst_tensor_difference(Mlp(shape).units(), run_threads(run, n)[0].params, stage3);
    std::printf("stage %d, G=2 on 4 ranks: worst relative difference to stage 3 %.3g; reordered stage 3's spread %.3g\n", stage, diff, spread);
    EXPECT_LE(diff, 4 * spread) << "stage " << stage;
  }
}

}  // namespace
}  // namespace zero::testing
