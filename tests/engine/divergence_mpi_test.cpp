// Divergent ranks fail fast, by name, under mpirun (2 and 4 processes): the last rank takes a
// detour; every rank gets the same error naming the unit and step, well before the 60 s timeout.
// Each case runs on its own split of the world: a communicator whose ranks diverged refuses
// every later collective.
#include <gtest/gtest.h>

#include "engine/divergent_run.h"

namespace zero {
namespace {

using testing::contains;
using testing::Detour;

Communicator& world() {
  static std::unique_ptr<Communicator> comm = make_communicator("mpi", {std::chrono::seconds(60), nullptr});
  return *comm;
}

class MpiDivergence : public ::testing::TestWithParam<int> {};

TEST_P(MpiDivergence, AnExtraMicroBatchOnTheLastRankStopsEveryRankNamingTheUnit) {
  std::unique_ptr<Communicator> comm = world().split(0, world().rank());
  const testing::DivergenceResult result = testing::run_divergent(GetParam(), Detour::kExtraMicroBatch, *comm);
  const std::string& m = result.message;
  EXPECT_FALSE(contains(m, "timed out")) << m;  // found by the order check, not the 60 s timeout
  EXPECT_TRUE(contains(m, "[comm] the ranks issued different collectives")) << m;
  EXPECT_TRUE(contains(m, "rank " + std::to_string(comm->size() - 1) + " issued")) << m;
  EXPECT_TRUE(contains(m, "for unit ") && contains(m, "(step 1, micro-batch 2)")) << m;
  // Every rank tells the same story: compare the message's hash with rank 0's.
  std::vector<std::uint64_t> hashes(world().size());
  const std::uint64_t mine = std::hash<std::string>{}(m);
  world().all_gather_bytes(&mine, sizeof mine, hashes.data());
  EXPECT_EQ(mine, hashes[0]) << m;
}

INSTANTIATE_TEST_SUITE_P(Stages, MpiDivergence, ::testing::Values(0, 1, 2, 3));

TEST(MpiDivergence, AnExtraEvaluationInStage3NamesTheGatheredUnit) {
  std::unique_ptr<Communicator> comm = world().split(0, world().rank());
  const testing::DivergenceResult result = testing::run_divergent(3, Detour::kExtraEvaluation, *comm);
  EXPECT_FALSE(contains(result.message, "timed out")) << result.message;
  EXPECT_TRUE(contains(result.message, "rank " + std::to_string(comm->size() - 1) + " issued all_gather")) << result.message;
  EXPECT_TRUE(contains(result.message, "for unit ")) << result.message;
}

}  // namespace
}  // namespace zero
