// The communicator on the "mpi" backend, run as real processes by CTest:
//   mpirun -np 2 mpi_comm_test    and    mpirun -np 4 mpi_comm_test
// Every rank runs the same tests in the same order (each test issues the same collectives on
// every rank). The one communicator lives for the whole run (MPI can be initialised once per
// process): made in main before the tests and destroyed after them, which runs MPI_Finalize.
// The contract suite (comm_contract_test.cpp) runs here over this process's rank, in both
// determinism modes; below it, what is particular to MPI, and the agreement with the "threads"
// backend run in this process on the same inputs: the two backends must agree exactly.
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "comm_contract.h"
#include "comm_test_util.h"
#include "comm/communicator.h"
#include "comm/segmented.h"
#include "comm/thread_world.h"
#include "common/error.h"
#include "memory/ledger.h"
#include "segmented_check.h"

namespace zero {
namespace {

using namespace std::chrono_literals;
using testing::bits_equal;
using testing::rank_input;
using testing::slot;
using testing::sum_in_rank_order;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr std::size_t kSizes[] = {0, 1, 5, 1500};  // elements per rank; 1500 crosses the 1024-element sum tile

Ledger g_ledger;                        // the communicator's scratch is accounted here
std::unique_ptr<Communicator> g_comm;  // the process's one MPI communicator

Communicator& comm() { return *g_comm; }
std::size_t world() { return static_cast<std::size_t>(g_comm->size()); }
int rank() { return g_comm->rank(); }
int idx(Collective c) { return static_cast<int>(c); }

// What the threads backend computes for all_reduce of rank_input(r, n, salt) on every rank r.
std::vector<std::vector<float>> threads_all_reduce(int n_ranks, std::size_t n, int salt) {
  std::vector<std::vector<float>> out(n_ranks);
  ThreadWorld threads(n_ranks);
  threads.run([&](int r) {
    auto c = threads.communicator(r);
    out[r] = rank_input(r, n, salt);
    c->all_reduce(out[r]);
  });
  return out;
}

}  // namespace

// The contract suite's ranks here: this process's rank of the mpirun job, on the one communicator.
namespace testing {
void run_on_every_rank(const ContractWorld& world, const std::function<void(Communicator&, Ledger*)>& body) {
  g_comm->set_determinism(world.determinism);  // every rank, between the same two collectives
  body(*g_comm, &g_ledger);
  g_comm->set_determinism(Determinism::kDeterministic);
}

INSTANTIATE_TEST_SUITE_P(Mpi, CommContract,
                         ::testing::Values(ContractWorld{"mpi", launched_world_size()}, ContractWorld{"mpi", launched_world_size(), Determinism::kFast}),
                         contract_world_name);
}  // namespace testing

namespace {

TEST(MpiComm, IdentityMatchesTheLaunch) {
  EXPECT_EQ(comm().backend(), "mpi");
  int launched = 0;
  ASSERT_TRUE(launched_by_mpi(&launched));
  EXPECT_EQ(comm().size(), launched);
  EXPECT_GE(rank(), 0);
  EXPECT_LT(rank(), comm().size());
  // Every rank a different number, together 0..N-1.
  std::vector<int> ranks(world(), -1);
  const int mine = rank();
  comm().all_gather_bytes(&mine, sizeof mine, ranks.data());
  for (std::size_t j = 0; j < world(); ++j) EXPECT_EQ(ranks[j], static_cast<int>(j));
}

TEST(MpiComm, AllReduceEqualsRankOrderSumAndTheThreadsBackend) {
  const std::size_t n = world();
  for (std::size_t k : kSizes) {
    SCOPED_TRACE(::testing::Message() << "k = " << k);
    auto data = rank_input(rank(), n * k, 6);
    comm().all_reduce(data);
    EXPECT_TRUE(bits_equal(data, sum_in_rank_order(n, n * k, 6)));
    const auto threads = threads_all_reduce(static_cast<int>(n), n * k, 6);
    EXPECT_TRUE(bits_equal(data, threads[rank()])) << "mpi and threads backends disagree";
  }
}

// The transport's reduce-scatter receives in chunks of at most 1 MiB into a ring of 4 per peer
// and sums each as it arrives (between 2 ranks the all-reduce is one exchange of the whole buffer,
// into the same ring); a slice under 4 MiB is cut into up to 4 chunks of at least 64 KiB: slices of
// one 64 KiB chunk and one element more (2 chunks), of 4 chunks (100003: the last 3 short; 262145:
// of 65537, the last 65534), and of four 1 MiB chunks and one element more (the ring wraps), in
// place (the sum overwriting this rank's own piece, which it also reads) and not.
TEST(MpiComm, ChunkedReduceScatterSumsInRankOrderInPlace) {
  const std::size_t n = world();
  for (std::size_t k : {16385, 100003, 262145, 1048577}) {
    SCOPED_TRACE(::testing::Message() << "k = " << k);
    const auto expected = sum_in_rank_order(n, n * k, 11);
    auto data = rank_input(rank(), n * k, 11);
    comm().reduce_scatter(data, std::span(data).subspan(rank() * k, k));
    EXPECT_TRUE(bits_equal(std::span(data).subspan(rank() * k, k), slot(expected, rank(), k)));
    data = rank_input(rank(), n * k, 11);
    comm().all_reduce(data);
    EXPECT_TRUE(bits_equal(data, expected));
  }
}

TEST(MpiComm, BarrierWaitsForTheLastRank) {
  // The last rank arrives late; nobody may leave the barrier before it arrived. The ranks
  // leave the previous test at slightly different times: align them first, and allow for that
  // skew (a barrier that did not wait would return after ~0 ms, not 200).
  comm().barrier();
  const auto start = std::chrono::steady_clock::now();
  if (rank() == comm().size() - 1) std::this_thread::sleep_for(200ms);
  comm().barrier();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);
}

// Segments: the same sweep as on thread ranks (segmented_check.h), with segments far below the
// backend's limit, so small slices reach the multi-piece paths a slice above INT_MAX would take.
TEST(MpiComm, SegmentedCollectivesMatchUnsegmentedBits) {
  for (std::size_t s : {1, 2, 3, 7, 0}) {
    for (std::size_t k : testing::kSegmentSweepSizes) {
      SCOPED_TRACE(::testing::Message() << "k " << k << " segment " << s);
      testing::check_every_collective(comm(), g_ledger, k, s);
    }
  }
}

// The stand-in for a slice above INT_MAX: 5000 elements per rank against a limit of 1024, so
// reduce_scatter and all_gather run in five pieces, and MPI's all-to-all scratch is one piece's.
TEST(MpiComm, ASliceLargerThanTheSegmentLimitReducesAndGathers) {
  const std::size_t n = world(), k = 5000, s = 1024;
  const auto send = rank_input(rank(), n * k, 50);
  std::vector<float> recv(k, kNaN);
  g_ledger.reset_peaks();
  const Traffic before = comm().traffic();
  comm().reduce_scatter(send, recv, s);
  EXPECT_TRUE(bits_equal(recv, slot(sum_in_rank_order(n, n * k, 50), rank(), k)));
  std::vector<float> all(n * k, kNaN);
  comm().all_gather(recv, all, s);
  EXPECT_TRUE(bits_equal(all, sum_in_rank_order(n, n * k, 50)));
  const Traffic t = comm().traffic() - before;
  EXPECT_EQ(t.pieces[idx(Collective::kReduceScatter)], 5u);
  EXPECT_EQ(t.pieces[idx(Collective::kAllGather)], 5u);
  // Packing (N, s) plus the receives' (N-1, s): bounded by the segment, not the slice.
  EXPECT_EQ(comm().scratch_bytes(Collective::kReduceScatter, k, s), (2 * n - 1) * s * sizeof(float));
  EXPECT_EQ(g_ledger.peak(Tier::kDevice, Category::kCommBuffers) - g_ledger.current(Tier::kDevice, Category::kCommBuffers),
            (2 * n - 1) * s * sizeof(float));
  EXPECT_EQ(comm().scratch_bytes(Collective::kReduceScatter, k), (n - 1) * k * sizeof(float)) << "unsegmented: the peers' pieces";
  // A slice of many chunks: a ring of 4 chunks of 1 MiB per peer, whatever the slice.
  EXPECT_EQ(comm().scratch_bytes(Collective::kReduceScatter, std::size_t{10} << 20), (n - 1) * 4 * (std::size_t{1} << 20));
  EXPECT_EQ(comm().segment_elements(), static_cast<std::size_t>(INT_MAX)) << "MPI's own limit: an int count of floats";
}

// Records of any size: MPI counts them in the widest unit dividing their size (8, 4, 2 or 1 bytes).
TEST(MpiComm, AllGatherBytesOfOddSizes) {
  for (std::size_t bytes : {1, 2, 6, 7, 10, 24}) {
    SCOPED_TRACE(::testing::Message() << bytes << "-byte records");
    std::vector<unsigned char> mine(bytes), all(world() * bytes + 1, 0xee);
    for (std::size_t i = 0; i < bytes; ++i) mine[i] = static_cast<unsigned char>(rank() * 31 + i);
    comm().all_gather_bytes(mine.data(), bytes, all.data());
    for (std::size_t j = 0; j < world(); ++j)
      for (std::size_t i = 0; i < bytes; ++i) EXPECT_EQ(all[j * bytes + i], static_cast<unsigned char>(j * 31 + i));
    EXPECT_EQ(all.back(), 0xee) << "nothing written past the end";
  }
}

// One machine: every rank on node 0, local ranks as Open MPI numbers them.
TEST(MpiComm, TopologyIsOneNodeAsTheLauncherSays) {
  EXPECT_EQ(comm().num_nodes(), 1);
  EXPECT_EQ(comm().node(), 0);
  EXPECT_EQ(comm().local_size(), comm().size());
  EXPECT_EQ(comm().local_rank(), rank());
  if (const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) {
    EXPECT_EQ(comm().local_rank(), std::atoi(v));
  }
  if (const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) {
    EXPECT_EQ(comm().local_size(), std::atoi(v));
  }
}

// Several communicators, each with a comm thread calling MPI: MULTIPLE, or SERIALIZED with the
// process-wide mutex when asked for (ZERO_MPI_THREAD_LEVEL=serialized; see tests/CMakeLists.txt).
TEST(MpiComm, ThreadLevelIsWhatWasAskedFor) {
  int provided = -1;
  MPI_Query_thread(&provided);
  const char* level = std::getenv("ZERO_MPI_THREAD_LEVEL");
  const bool serialized = level && std::string(level) == "serialized";
  EXPECT_EQ(provided, serialized ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE);
}

// Even and odd ranks, each half in reverse rank order, collectives on both halves and on the
// parent at once: three comm threads per process calling MPI together.
TEST(MpiComm, SplitEvenOddRunsConcurrentlyWithTheParent) {
  const int n = comm().size(), r = rank();
  auto half = comm().split(r % 2, -r);
  ASSERT_NE(half, nullptr);
  const int m = (n + 1 - r % 2) / 2;
  EXPECT_EQ(half->backend(), "mpi");
  EXPECT_EQ(half->size(), m);
  EXPECT_EQ(half->rank(), (n - 1 - r) / 2);
  EXPECT_EQ(half->local_size(), m);
  std::vector<int> world_ranks(m, -1);
  half->all_gather_bytes(&r, sizeof r, world_ranks.data());
  EXPECT_EQ(world_ranks[half->rank()], r);
  for (int j = 0; j + 1 < m; ++j) EXPECT_EQ(world_ranks[j], world_ranks[j + 1] + 2) << "ordered by key";

  const std::size_t k = 300;
  for (int round = 0; round < 3; ++round) {
    auto whole = rank_input(r, n * k, 60 + round);
    auto part = rank_input(half->rank(), m * k, 70 + round + 10 * (r % 2));
    std::vector<float> scattered(k);
    const auto rs_send = rank_input(half->rank(), m * k, 90 + round);
    Handle a = comm().all_reduce_async(whole, 64);
    Handle b = half->all_reduce_async(part, 32);
    Handle c = half->reduce_scatter_async(rs_send, scattered);
    Handle d = comm().barrier_async();
    c.wait(), d.wait(), b.wait(), a.wait();
    EXPECT_TRUE(bits_equal(whole, sum_in_rank_order(n, n * k, 60 + round))) << "parent, round " << round;
    EXPECT_TRUE(bits_equal(part, sum_in_rank_order(m, m * k, 70 + round + 10 * (r % 2)))) << "half, round " << round;
    EXPECT_TRUE(bits_equal(scattered, slot(sum_in_rank_order(m, m * k, 90 + round), half->rank(), k)));
  }
  auto quarter = half->split(half->rank() % 2, 0);  // a split of a split
  EXPECT_EQ(quarter->size(), (m - half->rank() % 2 + 1) / 2);
  quarter->barrier();
  half.reset();
  comm().barrier();
}

// Under mpirun with several processes, a one-process backend would train N separate models.
TEST(MpiComm, SelfAndThreadsRefuseAnMpiLaunch) {
  for (const char* name : {"self", "threads"}) {
    try {
      make_communicator(name);
      ADD_FAILURE() << name << " accepted a launch of " << world() << " processes";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("--comm mpi"), std::string::npos) << e.what();
    }
  }
}

// Prints failures of ranks other than 0 (whose output gtest prints as usual), tagged by rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int r) : rank_(r) {}
  // The test's name is kept here: asking gtest for it inside OnTestPartResult would deadlock.
  void OnTestStart(const ::testing::TestInfo& info) override {
    test_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::cerr << "[rank " << rank_ << "] " << test_ << " failed at " << (result.file_name() ? result.file_name() : "?")
              << ":" << result.line_number() << "\n"
              << result.summary() << std::endl;
  }

 private:
  int rank_;
  std::string test_;
};

}  // namespace
}  // namespace zero

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  try {
    zero::CommOptions options;
    options.timeout = std::chrono::seconds(30);  // a failing rank must not stall the others past CTest's limit
    options.ledger = &zero::g_ledger;
    zero::g_comm = zero::make_communicator("mpi", options);
    rank = zero::g_comm->rank();
  } catch (const std::exception& e) {
    std::cerr << "mpi_comm_test: " << e.what() << std::endl;
    return 1;
  }
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new zero::RankFailurePrinter(rank));
  }
  const int failed = RUN_ALL_TESTS();
  zero::g_comm.reset();  // MPI_Finalize
  return failed;
}
