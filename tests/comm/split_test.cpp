// Communicator facts beyond the collectives, on the "threads" and "self" backends (mpi_comm_test
// repeats them under mpirun): the node topology, split() into sub-communicators whose
// collectives run concurrently with the parent's, and a timeout set after construction.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "comm/thread_world.h"
#include "comm_test_util.h"
#include "common/error.h"

namespace zero {
namespace {

using namespace std::chrono_literals;
using testing::bits_equal;
using testing::rank_input;
using testing::slot;
using testing::sum_in_rank_order;

using Clock = std::chrono::steady_clock;

CommOptions with_timeout(std::chrono::milliseconds t) {
  CommOptions o;
  o.timeout = t;
  return o;
}

// --- Topology ---------------------------------------------------------------------------------

TEST(CommTopology, ThreadRanksAreOneNode) {
  const int n = 3;
  ThreadWorld world(n, with_timeout(20s));
  std::vector<NodeTopology> got(n);
  world.run([&](int r) {
    auto comm = world.communicator(r);
    got[r] = comm->topology();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(got[r].local_rank, r);
    EXPECT_EQ(got[r].local_size, n);
    EXPECT_EQ(got[r].node, 0);
    EXPECT_EQ(got[r].num_nodes, 1);
  }
}

// Thread ranks arranged as nodes: the topology, a split's (the members' nodes), and the bytes
// each collective hands peers on other nodes, counted per peer: 6 ranks as nodes {0-3} and {4,5}.
TEST(CommTopology, ThreadRanksAsNodesSplitAndCountBytesAcross) {
  const int n = 6;
  ThreadWorld world(n, with_timeout(20s), 4);
  std::vector<NodeTopology> top(n), strided(n);
  std::vector<Traffic> gather(n), bcast(n);
  world.run([&](int r) {
    auto comm = world.communicator(r);
    top[r] = comm->topology();
    strided[r] = comm->split(r % 2, r)->topology();
    std::vector<float> mine(3, 1.0f), all(3 * n), data(10, 2.0f);
    comm->all_gather(mine, all);
    gather[r] = comm->traffic();
    comm->broadcast(data, 0);
    bcast[r] = comm->traffic() - gather[r];
  });
  EXPECT_EQ(top[5].local_rank, 1);
  EXPECT_EQ(top[5].local_size, 2);
  EXPECT_EQ(top[5].node, 1);
  EXPECT_EQ(top[5].num_nodes, 2);
  EXPECT_EQ(top[5].node_of, (std::vector<int>{0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(strided[5].node_of, (std::vector<int>{0, 0, 1}));  // ranks 1, 3, 5
  EXPECT_EQ(strided[4].node_of, (std::vector<int>{0, 0, 1}));  // ranks 0, 2, 4
  EXPECT_EQ(strided[5].node, 1);
  for (int r = 0; r < n; ++r) {
    const std::uint64_t off_node = r < 4 ? 2 : 4;  // peers on the other node
    EXPECT_EQ(gather[r].total_sent(), 12u * (n - 1)) << r;
    EXPECT_EQ(gather[r].total_sent_across(), 12u * off_node) << r;
    EXPECT_EQ(bcast[r].total_sent_across(), r == 0 ? 40u * 2 : 0u) << r;
    EXPECT_EQ(bcast[r].received_across[static_cast<int>(Collective::kBroadcast)], r >= 4 ? 40u : 0u) << r;
  }
}

TEST(CommTopology, SelfIsRankZeroOfOne) {
  auto comm = make_communicator("self");
  EXPECT_EQ(comm->local_rank(), 0);
  EXPECT_EQ(comm->local_size(), 1);
  EXPECT_EQ(comm->node(), 0);
  EXPECT_EQ(comm->num_nodes(), 1);
}

// The arithmetic the mpi backend applies to "the lowest rank on my node" of every rank.
TEST(CommTopology, NodesAreNumberedByTheirLowestRank) {
  const std::vector<int> blocks = {0, 0, 2, 2, 2};  // ranks 0-1 on one node, 2-4 on another
  const NodeTopology r3 = node_topology(3, blocks);
  EXPECT_EQ(r3.local_rank, 1);
  EXPECT_EQ(r3.local_size, 3);
  EXPECT_EQ(r3.node, 1);
  EXPECT_EQ(r3.num_nodes, 2);
  const NodeTopology r1 = node_topology(1, blocks);
  EXPECT_EQ(r1.local_rank, 1);
  EXPECT_EQ(r1.local_size, 2);
  EXPECT_EQ(r1.node, 0);
  const std::vector<int> round_robin = {0, 1, 2, 0, 1, 2};  // a launcher that deals ranks out
  const NodeTopology r5 = node_topology(5, round_robin);
  EXPECT_EQ(r5.local_rank, 1);
  EXPECT_EQ(r5.local_size, 2);
  EXPECT_EQ(r5.node, 2);
  EXPECT_EQ(r5.num_nodes, 3);
  EXPECT_THROW(node_topology(6, round_robin), std::logic_error);
}

// --- split ------------------------------------------------------------------------------------

// Even and odd ranks, each half ranked in reverse (key = -rank), running collectives on both
// halves and on the parent at once. A half sums in its own rank order (the key's), so its result
// is the rank-order sum over sub-ranks; all_gather_bytes shows which world rank is which sub-rank.
void split_even_odd_concurrently(int n) {
  ThreadWorld world(n, with_timeout(20s));
  world.run([&](int r) {
    auto comm = world.communicator(r);
    auto half = comm->split(r % 2, -r);
    ASSERT_NE(half, nullptr);
    const int m = (n + 1 - r % 2) / 2;  // ranks of my parity
    EXPECT_EQ(half->size(), m);
    EXPECT_EQ(half->rank(), (n - 1 - r) / 2) << "ranks of my parity above mine come first";
    EXPECT_EQ(half->backend(), "threads");
    std::vector<int> world_ranks(m, -1);
    half->all_gather_bytes(&r, sizeof r, world_ranks.data());
    for (int j = 0; j + 1 < m; ++j) EXPECT_EQ(world_ranks[j], world_ranks[j + 1] + 2) << "ordered by key";
    EXPECT_EQ(world_ranks[half->rank()], r);

    const std::size_t k = 50;
    auto whole = rank_input(r, n * k, 1);
    auto part = rank_input(half->rank(), m * k, 2 + r % 2);
    std::vector<float> scattered(k);
    const auto rs_send = rank_input(half->rank(), m * k, 4);
    Handle a = comm->all_reduce_async(whole, 7);
    Handle b = half->all_reduce_async(part, 3);
    Handle c = half->reduce_scatter_async(rs_send, scattered);
    Handle d = comm->barrier_async();
    c.wait();
    d.wait();
    b.wait();
    a.wait();
    EXPECT_TRUE(bits_equal(whole, sum_in_rank_order(n, n * k, 1))) << "parent";
    EXPECT_TRUE(bits_equal(part, sum_in_rank_order(m, m * k, 2 + r % 2))) << "half " << r % 2;
    EXPECT_TRUE(bits_equal(scattered, slot(sum_in_rank_order(m, m * k, 4), half->rank(), k)));
  });
}

TEST(CommSplit, EvenAndOddRanksConcurrentlyWithTheParent) {
  for (int n : {2, 4, 5}) {
    SCOPED_TRACE(::testing::Message() << "world " << n);
    split_even_odd_concurrently(n);
  }
}

// One color for all: the same ranks, in key order; then split again, and outlive the parent.
TEST(CommSplit, SplitsNestAndOutliveTheirParent) {
  const int n = 4;
  ThreadWorld world(n, with_timeout(20s));
  std::vector<int> sub_sizes(n), sub_ranks(n);
  world.run([&](int r) {
    std::unique_ptr<Communicator> all, pair;
    {
      auto comm = world.communicator(r);
      all = comm->split(0, n - r);
      pair = all->split(all->rank() / 2, 0);
    }  // the parent is gone
    EXPECT_EQ(all->size(), n);
    EXPECT_EQ(all->rank(), n - 1 - r);
    auto data = rank_input(pair->rank(), 2 * 9, 5);
    pair->all_reduce(data);
    EXPECT_TRUE(bits_equal(data, sum_in_rank_order(2, 2 * 9, 5)));
    sub_sizes[r] = pair->size();
    sub_ranks[r] = pair->rank();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(sub_sizes[r], 2);
    EXPECT_EQ(sub_ranks[r], (n - 1 - r) % 2) << "ties keep the parent's rank order";
  }
}

// A failing rank aborts the worlds split from its world too: nobody waits out the timeout.
TEST(CommSplit, AFailingRankFailsTheSubWorlds) {
  const int n = 4;
  ThreadWorld world(n, with_timeout(20s));
  std::vector<std::string> messages(n);
  EXPECT_THROW(world.run([&](int r) {
    auto comm = world.communicator(r);
    auto half = comm->split(r % 2, r);
    if (r == 2) throw std::runtime_error("rank 2 fails");
    std::vector<float> data(half->size() * 4, 1.0f);
    try {
      half->all_reduce(data);  // rank 0's half waits for rank 2
    } catch (const CommError& e) {
      messages[r] = e.what();
    }
  }), std::runtime_error);
  // Failed by the abort (the message names the failed rank), not by the 20 s timeout (whose
  // message says "timed out"): asserted on the message, not on a wall-clock time.
  EXPECT_NE(messages[0].find("rank 2 failed"), std::string::npos) << messages[0];
  EXPECT_EQ(messages[0].find("timed out"), std::string::npos) << messages[0];
}

TEST(CommSplit, SelfSplitsIntoItself) {
  auto comm = make_communicator("self");
  auto sub = comm->split(3, 9);
  EXPECT_EQ(sub->backend(), "self");
  EXPECT_EQ(sub->size(), 1);
  EXPECT_EQ(sub->rank(), 0);
  auto data = rank_input(0, 11, 6);
  sub->all_reduce(data, 2);
  EXPECT_TRUE(bits_equal(data, rank_input(0, 11, 6)));
  EXPECT_THROW(comm->split(-1, 0), std::logic_error);
}

// --- Timeout ----------------------------------------------------------------------------------

TEST(CommTimeout, MustBePositive) {
  auto comm = make_communicator("self");
  EXPECT_EQ(comm->timeout(), std::chrono::milliseconds(std::chrono::minutes(5))) << "the default";
  for (auto bad : {0ms, -5ms}) {
    try {
      comm->set_timeout(bad);
      ADD_FAILURE() << "accepted " << bad.count() << " ms";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("[comm]"), std::string::npos) << e.what();
    }
  }
  comm->set_timeout(1500ms);
  EXPECT_EQ(comm->timeout(), 1500ms);
  EXPECT_EQ(comm->options().timeout, 1500ms);
}

// A timeout set after construction (as zero train does from --comm-timeout) applies: the rank
// that never joins makes the others fail quickly, naming the op and, for a segmented one, the piece.
TEST(CommTimeout, SetTimeoutFailsACollectiveOneRankNeverJoins) {
  const int n = 3, missing = 1;
  ThreadWorld world(n, with_timeout(20s));
  std::vector<std::string> messages(n);
  std::vector<double> seconds(n);
  world.run([&](int r) {
    auto comm = world.communicator(r);
    comm->set_timeout(200ms);
    comm->set_context("step 2");
    std::vector<float> send(n * 10, 1.0f), recv(10);
    comm->reduce_scatter(send, recv, 4);  // all take part in the first
    if (r == missing) return;
    const auto start = Clock::now();
    try {
      comm->reduce_scatter(send, recv, 4);
    } catch (const CommError& e) {
      messages[r] = e.what();
    }
    seconds[r] = std::chrono::duration<double>(Clock::now() - start).count();
  });
  for (int r = 0; r < n; ++r) {
    if (r == missing) continue;
    SCOPED_TRACE(messages[r]);
    // The order check before each collective is where the missing rank is first missed.
    EXPECT_NE(messages[r].find("[comm] order check before reduce_scatter of 40 B per rank in 3 pieces"), std::string::npos);
    EXPECT_NE(messages[r].find("step 2"), std::string::npos);
    EXPECT_NE(messages[r].find("200 ms"), std::string::npos);
    EXPECT_GE(seconds[r], 0.15) << "a timeout never fires before it is due (a steady clock)";
    // The set timeout, not the 20 s one: the message names the 200 ms (no wall-clock upper bound,
    // which a loaded machine can pass).
  }
}

}  // namespace
}  // namespace zero
