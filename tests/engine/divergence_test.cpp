// Divergent ranks fail fast, by name (thread ranks): a rank that takes another path stops every
// rank with one error that names the collective, the unit and the step where the paths part,
// long before the collective timeout (60 s here).
#include <gtest/gtest.h>

#include "comm/thread_world.h"
#include "engine/divergent_run.h"

namespace zero {
namespace {

using testing::contains;
using testing::Detour;
using testing::DivergenceResult;

std::vector<DivergenceResult> run_threads(int n, int stage, Detour detour) {
  ThreadWorld world(n, {std::chrono::seconds(60), nullptr});
  std::vector<DivergenceResult> results(n);
  world.run([&](int r) {
    auto comm = world.communicator(r);
    results[r] = testing::run_divergent(stage, detour, *comm);
  });
  return results;
}

class Divergence : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(Divergence, AnExtraMicroBatchOnOneRankStopsEveryRankNamingTheUnit) {
  const auto [n, stage] = GetParam();
  const std::vector<DivergenceResult> results = run_threads(n, stage, Detour::kExtraMicroBatch);
  const std::string odd = "rank " + std::to_string(n - 1) + " issued";
  for (int r = 0; r < n; ++r) {
    const std::string& m = results[r].message;
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + m);
    EXPECT_FALSE(contains(m, "timed out")) << m;  // found by the order check, not the 60 s timeout
    EXPECT_TRUE(contains(m, "[comm] the ranks issued different collectives")) << m;
    EXPECT_TRUE(contains(m, odd)) << m;
    EXPECT_TRUE(contains(m, n == 2 ? "rank 0 issued" : "ranks 0, 1")) << m;
    EXPECT_TRUE(contains(m, "for unit ")) << m;  // the unit where the paths part
    EXPECT_TRUE(contains(m, odd + " ") && contains(m, "(step 1, micro-batch 2)")) << m;  // the detour, by step
    EXPECT_EQ(m, results[0].message);  // every rank tells the same story
  }
}

INSTANTIATE_TEST_SUITE_P(RanksAndStages, Divergence,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Values(0, 1, 2, 3)));

TEST(Divergence, AnExtraEvaluationInStage3NamesTheGatheredUnit) {
  const int n = 3;
  const std::vector<DivergenceResult> results = run_threads(n, 3, Detour::kExtraEvaluation);
  for (int r = 0; r < n; ++r) {
    const std::string& m = results[r].message;
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + m);
    EXPECT_FALSE(contains(m, "timed out")) << m;
    EXPECT_TRUE(contains(m, "the ranks issued different collectives")) << m;
    EXPECT_TRUE(contains(m, "rank 2 issued all_gather")) << m;
    EXPECT_TRUE(contains(m, "for unit ")) << m;
  }
}

TEST(Divergence, RanksOnTheSamePathNeverTripTheCheck) {
  for (int stage = 0; stage <= 3; ++stage) {
    testing::MlpRun run;
    run.stage = stage;
    const std::vector<testing::RankResult> results = testing::run_threads(run, 3);
    EXPECT_EQ(results.size(), 3u);
  }
}

}  // namespace
}  // namespace zero
