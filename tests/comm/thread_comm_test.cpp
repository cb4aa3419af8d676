// The communicator on the "threads" backend (N ranks as threads of one process) and the "self"
// backend, checked against plain references: every reduction must equal the left-to-right sum
// in rank order, bit for bit, and the traffic counters must show the bandwidth-optimal bytes.
// Failures (a rank that never comes, a rank that throws, ranks that issue different
// collectives) must become CommErrors quickly, never a hang.
#include "comm/thread_world.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
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
using Results = std::vector<std::vector<float>>;  // (world) per-rank result

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr std::size_t kSizes[] = {0, 1, 5, 1500};  // elements per rank; 1500 crosses the 1024-element sum tile

CommOptions options_with_timeout(std::chrono::milliseconds timeout) {
  CommOptions o;
  o.timeout = timeout;
  return o;
}

// Runs fn(comm, rank) on every rank of a fresh world of `n` threads.
void run_ranks(int n, const std::function<void(Communicator&, int)>& fn,
               CommOptions options = options_with_timeout(20s)) {
  ThreadWorld world(n, options);
  world.run([&](int rank) {
    auto comm = world.communicator(rank);
    fn(*comm, rank);
  });
}

std::string world_name(const ::testing::TestParamInfo<int>& p) { return "world" + std::to_string(p.param); }

class ThreadComm : public ::testing::TestWithParam<int> {
 protected:
  int world() const { return GetParam(); }
};

TEST_P(ThreadComm, IdentityOfEachRank) {
  std::vector<int> ranks(world(), -1);
  run_ranks(world(), [&](Communicator& comm, int rank) {
    EXPECT_EQ(comm.size(), world());
    EXPECT_EQ(comm.backend(), "threads");
    ranks[rank] = comm.rank();
  });
  for (int r = 0; r < world(); ++r) EXPECT_EQ(ranks[r], r);
}

TEST_P(ThreadComm, InputsTellSummationOrdersApart) {
  // Guards the other tests: with 3+ ranks, another order would change the bits.
  if (world() < 3) GTEST_SKIP() << "two addends commute exactly";
  const std::size_t n = 4096;
  const auto forward = sum_in_rank_order(world(), n, 1);
  const auto reverse = testing::sum_in_reverse_order(world(), n, 1);
  EXPECT_GT(testing::count_bit_differences(forward, reverse), n / 10);
}

TEST_P(ThreadComm, ReduceScatterSumsInRankOrder) {
  const int n = world();
  for (std::size_t k : kSizes) {
    SCOPED_TRACE(::testing::Message() << "k = " << k);
    const auto expected = sum_in_rank_order(n, n * k, 2);
    Results got(n);
    run_ranks(n, [&](Communicator& comm, int rank) {
      const auto send = rank_input(rank, n * k, 2);
      std::vector<float> recv(k, kNaN);
      comm.reduce_scatter(send, recv);
      EXPECT_TRUE(bits_equal(send, rank_input(rank, n * k, 2))) << "send must not change";
      got[rank] = recv;
    });
    for (int r = 0; r < n; ++r) EXPECT_TRUE(bits_equal(got[r], slot(expected, r, k))) << "rank " << r;
  }
}

TEST_P(ThreadComm, ReduceScatterInPlace) {
  const int n = world();
  const std::size_t k = 1500;
  const auto expected = sum_in_rank_order(n, n * k, 3);
  Results got(n);
  run_ranks(n, [&](Communicator& comm, int rank) {
    auto data = rank_input(rank, n * k, 3);
    const std::span<float> mine = std::span<float>(data).subspan(rank * k, k);
    comm.reduce_scatter(data, mine);
    got[rank] = data;
  });
  for (int r = 0; r < n; ++r) {
    const auto original = rank_input(r, n * k, 3);
    for (int j = 0; j < n; ++j) {
      if (j == r) {
        EXPECT_TRUE(bits_equal(slot(got[r], j, k), slot(expected, r, k))) << "rank " << r << " own slot";
      } else {
        EXPECT_TRUE(bits_equal(slot(got[r], j, k), slot(original, j, k))) << "rank " << r << " slot " << j;
      }
    }
  }
}

TEST_P(ThreadComm, AllGatherConcatenatesInRankOrder) {
  const int n = world();
  for (std::size_t k : kSizes) {
    SCOPED_TRACE(::testing::Message() << "k = " << k);
    Results got(n);
    run_ranks(n, [&](Communicator& comm, int rank) {
      const auto send = rank_input(rank, k, 4);
      std::vector<float> recv(n * k, kNaN);
      comm.all_gather(send, recv);
      got[rank] = recv;
    });
    for (int r = 0; r < n; ++r)
      for (int j = 0; j < n; ++j)
        EXPECT_TRUE(bits_equal(slot(got[r], j, k), rank_input(j, k, 4))) << "rank " << r << " slot " << j;
  }
}

TEST_P(ThreadComm, AllGatherInPlace) {
  const int n = world();
  const std::size_t k = 33;
  Results got(n);
  run_ranks(n, [&](Communicator& comm, int rank) {
    std::vector<float> data(n * k, kNaN);
    const auto mine = rank_input(rank, k, 5);
    std::copy(mine.begin(), mine.end(), data.begin() + rank * k);
    comm.all_gather(std::span<const float>(data).subspan(rank * k, k), data);
    got[rank] = data;
  });
  for (int r = 0; r < n; ++r)
    for (int j = 0; j < n; ++j)
      EXPECT_TRUE(bits_equal(slot(got[r], j, k), rank_input(j, k, 5))) << "rank " << r << " slot " << j;
}

TEST_P(ThreadComm, AllReduceGivesEveryRankTheRankOrderSum) {
  const int n = world();
  for (std::size_t k : kSizes) {
    SCOPED_TRACE(::testing::Message() << "k = " << k);
    const auto expected = sum_in_rank_order(n, n * k, 6);
    Results got(n);
    run_ranks(n, [&](Communicator& comm, int rank) {
      auto data = rank_input(rank, n * k, 6);
      comm.all_reduce(data);
      got[rank] = data;
    });
    for (int r = 0; r < n; ++r) EXPECT_TRUE(bits_equal(got[r], expected)) << "rank " << r;
  }
}

TEST_P(ThreadComm, BroadcastFromEveryRoot) {
  const int n = world();
  const std::size_t k = 17;
  for (int root = 0; root < n; ++root) {
    Results got(n);
    run_ranks(n, [&](Communicator& comm, int rank) {
      auto data = rank_input(rank, k, 7);
      comm.broadcast(data, root);
      got[rank] = data;
    });
    for (int r = 0; r < n; ++r) EXPECT_TRUE(bits_equal(got[r], rank_input(root, k, 7))) << "root " << root << " rank " << r;
  }
}

TEST_P(ThreadComm, BarrierHoldsEveryRankUntilAllArrive) {
  const int n = world();
  std::atomic<int> arrived{0};
  std::vector<int> seen(n * 5, -1);
  run_ranks(n, [&](Communicator& comm, int rank) {
    for (int round = 0; round < 5; ++round) {
      if (rank == round % n) std::this_thread::sleep_for(20ms);  // a late rank each round
      arrived.fetch_add(1);
      comm.barrier();
      seen[round * n + rank] = arrived.load();
      comm.barrier();  // nobody starts the next round before everyone has looked
    }
  });
  for (int round = 0; round < 5; ++round)
    for (int r = 0; r < n; ++r) EXPECT_EQ(seen[round * n + r], (round + 1) * n) << "round " << round << " rank " << r;
}

// Several collectives in flight at once, issued in one order and waited in another: the comm
// thread still runs them in issue order on every rank, so each result is the plain reference.
TEST_P(ThreadComm, AsyncHandlesWaitedOutOfOrder) {
  const int n = world();
  const std::size_t k = 1100;
  constexpr int kReduces = 4;
  std::vector<Results> reduced(kReduces, Results(n));
  Results scattered(n), gathered(n), broadcast(n);
  run_ranks(n, [&](Communicator& comm, int rank) {
    const auto rs_send = rank_input(rank, n * k, 10);
    std::vector<float> rs_recv(k, kNaN);
    const auto ag_send = rank_input(rank, k, 11);
    std::vector<float> ag_recv(n * k, kNaN);
    auto bc = rank_input(rank, k, 12);
    std::vector<std::vector<float>> ar(kReduces);
    for (int i = 0; i < kReduces; ++i) ar[i] = rank_input(rank, n * k, 20 + i);

    std::vector<Handle> h;
    h.push_back(comm.reduce_scatter_async(rs_send, rs_recv));
    h.push_back(comm.all_reduce_async(ar[0]));
    h.push_back(comm.all_gather_async(ag_send, ag_recv));
    h.push_back(comm.all_reduce_async(ar[1]));
    h.push_back(comm.barrier_async());
    h.push_back(comm.broadcast_async(bc, n - 1));
    h.push_back(comm.all_reduce_async(ar[2]));
    h.push_back(comm.all_reduce_async(ar[3]));
    for (int i : {5, 2, 7, 0, 4, 1, 6, 3}) {
      ASSERT_TRUE(h[i].valid());
      h[i].wait();
    }
    h[3].wait();  // waiting twice is fine
    scattered[rank] = rs_recv;
    gathered[rank] = ag_recv;
    broadcast[rank] = bc;
    for (int i = 0; i < kReduces; ++i) reduced[i][rank] = ar[i];
  });
  const auto rs_expected = sum_in_rank_order(n, n * k, 10);
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(bits_equal(scattered[r], slot(rs_expected, r, k))) << "reduce_scatter rank " << r;
    for (int j = 0; j < n; ++j) EXPECT_TRUE(bits_equal(slot(gathered[r], j, k), rank_input(j, k, 11))) << "all_gather rank " << r;
    EXPECT_TRUE(bits_equal(broadcast[r], rank_input(n - 1, k, 12))) << "broadcast rank " << r;
    for (int i = 0; i < kReduces; ++i)
      EXPECT_TRUE(bits_equal(reduced[i][r], sum_in_rank_order(n, n * k, 20 + i))) << "all_reduce " << i << " rank " << r;
  }
}

// Bytes per kind: reduce_scatter and all_gather of k elements per rank move (N-1)*k*4 bytes
// each way; all_reduce twice that; broadcast: the root sends N-1 copies, the others receive one.
TEST_P(ThreadComm, TrafficCountersShowPayloadBytes) {
  const int n = world();
  const std::size_t k = 7;
  std::vector<Traffic> diff(n);
  run_ranks(n, [&](Communicator& comm, int rank) {
    const Traffic before = comm.traffic();
    std::vector<float> big(n * k, 1.0f), small(k, 1.0f);
    comm.reduce_scatter(big, small);
    comm.reduce_scatter(big, small);
    comm.all_gather(small, big);
    comm.all_reduce(big);
    comm.all_reduce(big);
    comm.all_reduce(big);
    comm.broadcast(small, 0);
    comm.barrier();
    comm.barrier();
    diff[rank] = comm.traffic() - before;
  });
  const auto idx = [](Collective c) { return static_cast<int>(c); };
  const std::uint64_t piece = (n - 1) * k * 4;
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE(::testing::Message() << "rank " << r);
    const Traffic& t = diff[r];
    EXPECT_EQ(t.calls[idx(Collective::kReduceScatter)], 2u);
    EXPECT_EQ(t.sent[idx(Collective::kReduceScatter)], 2 * piece);
    EXPECT_EQ(t.received[idx(Collective::kReduceScatter)], 2 * piece);
    EXPECT_EQ(t.calls[idx(Collective::kAllGather)], 1u);
    EXPECT_EQ(t.sent[idx(Collective::kAllGather)], piece);
    EXPECT_EQ(t.received[idx(Collective::kAllGather)], piece);
    EXPECT_EQ(t.calls[idx(Collective::kAllReduce)], 3u);
    EXPECT_EQ(t.sent[idx(Collective::kAllReduce)], 3 * 2 * piece);
    EXPECT_EQ(t.received[idx(Collective::kAllReduce)], 3 * 2 * piece);
    EXPECT_EQ(t.calls[idx(Collective::kBroadcast)], 1u);
    EXPECT_EQ(t.sent[idx(Collective::kBroadcast)], r == 0 ? (n - 1) * k * 4 : 0u);
    EXPECT_EQ(t.received[idx(Collective::kBroadcast)], r == 0 ? 0u : k * 4);
    EXPECT_EQ(t.calls[idx(Collective::kBarrier)], 2u);
    EXPECT_EQ(t.sent[idx(Collective::kBarrier)], 0u);
    EXPECT_EQ(t.total_sent(), 2 * piece + piece + 6 * piece + (r == 0 ? (n - 1) * k * 4 : 0u));
    EXPECT_EQ(t.total_received(), 2 * piece + piece + 6 * piece + (r == 0 ? 0u : k * 4));
  }
}

TEST_P(ThreadComm, AllGatherBytesCollectsEveryRanksRecord) {
  const int n = world();
  struct Record {
    std::int32_t rank;
    std::uint64_t fingerprint;
  };
  std::vector<std::vector<Record>> got(n);
  std::vector<Traffic> diff(n);
  run_ranks(n, [&](Communicator& comm, int rank) {
    const Traffic before = comm.traffic();
    const Record mine{rank, 1000u + static_cast<std::uint64_t>(rank)};
    got[rank].resize(n);
    comm.all_gather_bytes(&mine, sizeof mine, got[rank].data());
    diff[rank] = comm.traffic() - before;
  });
  for (int r = 0; r < n; ++r) {
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(got[r][j].rank, j);
      EXPECT_EQ(got[r][j].fingerprint, 1000u + j);
    }
    EXPECT_EQ(diff[r].calls[static_cast<int>(Collective::kAllGather)], 1u);
    EXPECT_EQ(diff[r].sent[static_cast<int>(Collective::kAllGather)], (n - 1) * sizeof(Record));
  }
}

TEST_P(ThreadComm, WrongSizesAreRejectedBeforeAnythingIsIssued) {
  const int n = world();
  run_ranks(n, [&](Communicator& comm, int) {
    std::vector<float> big(n * 4 + 1), small(4);
    EXPECT_THROW(comm.reduce_scatter_async(big, small), std::logic_error);
    EXPECT_THROW(comm.all_gather_async(small, big), std::logic_error);
    if (n > 1) {
      EXPECT_THROW(comm.all_reduce_async(std::span<float>(big).first(n + 1)), std::logic_error);
    }
    EXPECT_THROW(comm.broadcast_async(small, n), std::logic_error);
    EXPECT_THROW(comm.broadcast_async(small, -1), std::logic_error);
    comm.barrier();  // nothing was issued: the world is still in step
  });
}

INSTANTIATE_TEST_SUITE_P(Worlds, ThreadComm, ::testing::Values(1, 2, 3, 4),
                         world_name);

// --- Failures: errors, not hangs -------------------------------------------------------------

class ThreadCommFailure : public ::testing::TestWithParam<int> {
 protected:
  int world() const { return GetParam(); }
};

// A rank that never issues the collective: the others fail after the timeout with a CommError
// that names the collective, the caller's context and the missing rank.
TEST_P(ThreadCommFailure, MissingRankTimesOutNamingOpAndRank) {
  const int n = world();
  const int missing = n / 2;  // 1, 1, 2: not always the last one
  ThreadWorld world(n, options_with_timeout(300ms));
  std::vector<std::string> messages(n);
  std::vector<double> seconds(n, 0.0);
  world.run([&](int rank) {
    auto comm = world.communicator(rank);
    comm->set_context("step 7");
    std::vector<float> data(n * 3, 1.0f);
    comm->all_reduce(data);  // everyone takes part in the first
    if (rank == missing) return;
    const auto start = Clock::now();
    try {
      comm->all_reduce(data);
    } catch (const CommError& e) {
      messages[rank] = e.what();
    }
    seconds[rank] = std::chrono::duration<double>(Clock::now() - start).count();
  });
  for (int r = 0; r < n; ++r) {
    if (r == missing) continue;
    SCOPED_TRACE(::testing::Message() << "rank " << r << ": " << messages[r]);
    EXPECT_NE(messages[r].find("[comm]"), std::string::npos);
    EXPECT_NE(messages[r].find("all_reduce"), std::string::npos) << "names the collective the caller issued";
    EXPECT_NE(messages[r].find("step 7"), std::string::npos) << "names the caller's context";
    EXPECT_NE(messages[r].find("timed out"), std::string::npos);
    EXPECT_NE(messages[r].find("waiting for ranks " + std::to_string(missing) + ":"), std::string::npos)
        << "names exactly the missing rank";
    EXPECT_GE(seconds[r], 0.25) << "a timeout never fires before it is due (a steady clock)";
  }
}

// A rank whose function throws: the others' collectives fail at once (not after the timeout)
// with a CommError that points at the failed rank, and run() rethrows the original error.
TEST_P(ThreadCommFailure, ThrowingRankFailsOthersAndRunRethrowsTheOriginal) {
  const int n = world();
  const int thrower = n - 1;
  ThreadWorld world(n, options_with_timeout(20s));
  std::vector<std::string> messages(n);
  try {
    world.run([&](int rank) {
      auto comm = world.communicator(rank);
      std::vector<float> data(n * 5, 1.0f);
      comm->all_reduce(data);
      if (rank == thrower) {
        std::this_thread::sleep_for(50ms);  // the others are already waiting in the next one
        throw std::runtime_error("boom on the last rank");
      }
      try {
        comm->all_reduce(data);
      } catch (const CommError& e) {
        messages[rank] = e.what();
        throw;
      }
      ADD_FAILURE() << "rank " << rank << "'s all_reduce succeeded without the thrower";
    });
    ADD_FAILURE() << "run() returned normally";
  } catch (const CommError& e) {
    ADD_FAILURE() << "run() rethrew a consequence, not the cause: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "boom on the last rank");
  }
  for (int r = 0; r < n; ++r) {
    if (r == thrower) continue;
    EXPECT_NE(messages[r].find("rank " + std::to_string(thrower) + " failed: boom"), std::string::npos) << messages[r];
    EXPECT_EQ(messages[r].find("timed out"), std::string::npos) << "failed by the abort, not by the 20 s timeout: " << messages[r];
  }
}

// The same with collectives in flight: every outstanding handle of the surviving ranks fails.
TEST_P(ThreadCommFailure, ThrowingRankFailsOutstandingHandles) {
  const int n = world();
  ThreadWorld world(n, options_with_timeout(20s));
  std::vector<int> failed(n, 0);
  EXPECT_THROW(world.run([&](int rank) {
    auto comm = world.communicator(rank);
    if (rank == 0) {
      std::this_thread::sleep_for(50ms);
      throw std::invalid_argument("bad batch on rank 0");
    }
    std::vector<std::vector<float>> data(3, std::vector<float>(n * 2, 1.0f));
    std::vector<Handle> h;
    for (auto& d : data) h.push_back(comm->all_reduce_async(d));
    for (int i = 2; i >= 0; --i) {
      try {
        h[i].wait();
      } catch (const CommError&) {
        ++failed[rank];
      }
    }
  }), std::invalid_argument);
  for (int r = 1; r < n; ++r) EXPECT_EQ(failed[r], 3) << "rank " << r;
}

// Ranks that issue different collectives meet at the same rendezvous; reading each other's
// buffers with the wrong shape would be memory corruption, so it must be an error on every rank.
TEST_P(ThreadCommFailure, DifferentCollectivesOnDifferentRanksFail) {
  const int n = world();
  ThreadWorld world(n, options_with_timeout(20s));
  std::vector<std::string> messages(n);
  world.run([&](int rank) {
    auto comm = world.communicator(rank);
    std::vector<float> big(n * 8, 1.0f), small(8, 1.0f);
    try {
      if (rank == n - 1) {
        comm->all_gather(small, big);
      } else {
        comm->reduce_scatter(big, small);
      }
    } catch (const CommError& e) {
      messages[rank] = e.what();
    }
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(messages[r].find("timed out"), std::string::npos) << "found at the rendezvous, not by the timeout: " << messages[r];
    EXPECT_NE(messages[r].find("different"), std::string::npos) << "rank " << r << ": " << messages[r];
    EXPECT_NE(messages[r].find("all_gather"), std::string::npos) << messages[r];
    EXPECT_NE(messages[r].find("reduce_scatter"), std::string::npos) << messages[r];
  }
}

TEST_P(ThreadCommFailure, SameCollectiveWithDifferentSizesFails) {
  const int n = world();
  ThreadWorld world(n, options_with_timeout(20s));
  std::vector<int> failed(n, 0);
  world.run([&](int rank) {
    auto comm = world.communicator(rank);
    std::vector<float> data(rank == 0 ? n * 4 : n * 2, 1.0f);
    try {
      comm->all_reduce(data);
    } catch (const CommError&) {
      failed[rank] = 1;
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(failed[r], 1) << "rank " << r;
}

TEST_P(ThreadCommFailure, AbortedWorldFailsEveryLaterCollective) {
  const int n = world();
  ThreadWorld world(n, options_with_timeout(20s));
  world.abort("[comm] stopped by the test");
  std::vector<std::string> messages(n);
  world.run([&](int rank) {
    auto comm = world.communicator(rank);
    try {
      comm->barrier();
    } catch (const CommError& e) {
      messages[rank] = e.what();
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(messages[r], "[comm] stopped by the test");
}

INSTANTIATE_TEST_SUITE_P(Worlds, ThreadCommFailure, ::testing::Values(2, 3, 4),
                         world_name);

TEST(ThreadCommSetup, RejectsEmptyWorldAndForeignRanks) {
  EXPECT_THROW(ThreadWorld(0), ConfigError);
  ThreadWorld world(2);
  EXPECT_THROW(world.communicator(2), std::logic_error);
  EXPECT_THROW(world.communicator(-1), std::logic_error);
}

// --- The "self" backend and the factory ------------------------------------------------------

TEST(SelfComm, CollectivesAreCopiesAndMoveNoBytes) {
  auto comm = make_communicator("self");
  EXPECT_EQ(comm->backend(), "self");
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);

  const auto x = rank_input(0, 1500, 30);
  std::vector<float> y(1500, kNaN);
  comm->reduce_scatter(x, y);
  EXPECT_TRUE(bits_equal(y, x));
  auto z = x;
  comm->reduce_scatter(z, z);  // in place
  EXPECT_TRUE(bits_equal(z, x));
  std::fill(y.begin(), y.end(), kNaN);
  comm->all_gather(x, y);
  EXPECT_TRUE(bits_equal(y, x));
  comm->all_gather(z, z);
  EXPECT_TRUE(bits_equal(z, x));
  comm->all_reduce(z);
  EXPECT_TRUE(bits_equal(z, x));
  comm->broadcast(z, 0);
  EXPECT_TRUE(bits_equal(z, x));
  Handle a = comm->all_reduce_async(z);
  Handle b = comm->barrier_async();
  b.wait();
  a.wait();
  EXPECT_TRUE(bits_equal(z, x));
  EXPECT_THROW(comm->broadcast(z, 1), std::logic_error);

  const Traffic t = comm->traffic();
  EXPECT_EQ(t.total_sent(), 0u);
  EXPECT_EQ(t.total_received(), 0u);
  EXPECT_EQ(t.calls[static_cast<int>(Collective::kReduceScatter)], 2u);
  EXPECT_EQ(t.calls[static_cast<int>(Collective::kAllGather)], 2u);
  EXPECT_EQ(t.calls[static_cast<int>(Collective::kAllReduce)], 2u);
  EXPECT_EQ(t.calls[static_cast<int>(Collective::kBroadcast)], 1u);
  EXPECT_EQ(t.calls[static_cast<int>(Collective::kBarrier)], 1u);
}

TEST(CommFactory, ThreadsAndUnknownNamesAreConfigErrors) {
  try {
    make_communicator("threads");
    ADD_FAILURE() << "make_communicator(\"threads\") returned";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("ThreadWorld"), std::string::npos) << e.what();
  }
  for (const char* name : {"gloo", "", "MPI", "Self"}) {
    try {
      make_communicator(name);
      ADD_FAILURE() << "make_communicator(\"" << name << "\") returned";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("unknown backend"), std::string::npos) << e.what();
    }
  }
}

// Started by mpirun as one of several processes, a single-process backend would silently train
// N independent models: refuse, and say which backend to use.
TEST(CommFactory, SelfRefusesAnMpiLaunchOfSeveralProcesses) {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    SCOPED_TRACE(var);
    ASSERT_EQ(setenv(var, "3", 1), 0);
    int size = 0;
    EXPECT_TRUE(launched_by_mpi(&size));
    EXPECT_EQ(size, 3);
    for (const char* name : {"self", "threads"}) {
      try {
        make_communicator(name);
        ADD_FAILURE() << name << " accepted an mpirun launch of 3 processes";
      } catch (const CommError& e) {
        EXPECT_NE(std::string(e.what()).find("--comm mpi"), std::string::npos) << e.what();
      }
    }
    ASSERT_EQ(setenv(var, "1", 1), 0);  // mpirun -np 1: one process, self is right
    EXPECT_EQ(make_communicator("self")->size(), 1);
    unsetenv(var);
  }
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMI_SIZE") == nullptr) {
    EXPECT_FALSE(launched_by_mpi(nullptr));
  }
}

}  // namespace
}  // namespace zero
