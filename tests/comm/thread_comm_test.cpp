// The communicator on the "threads" backend (N ranks as threads of one process) and the "self"
// backend: the contract suite (comm_contract_test.cpp) over self and 1-4 thread ranks in both
// determinism modes, and what is particular to these backends. Failures (a rank that never
// comes, a rank that throws, ranks that issue different collectives) must become CommErrors
// quickly, never a hang.
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
#include "comm_contract.h"
#include "comm_test_util.h"
#include "common/error.h"

namespace zero {
namespace {

using namespace std::chrono_literals;
using testing::bits_equal;
using testing::rank_input;

using Clock = std::chrono::steady_clock;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

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

}  // namespace

// The contract suite's ranks here: self, or thread ranks of one ThreadWorld.
namespace testing {
void run_on_every_rank(const ContractWorld& world, const std::function<void(Communicator&, Ledger*)>& body) {
  CommOptions options = options_with_timeout(20s);
  options.determinism = world.determinism;
  if (world.backend == "self") {
    Ledger ledger;
    options.ledger = &ledger;
    auto comm = make_communicator("self", options);
    body(*comm, &ledger);
    return;
  }
  ThreadWorld threads(world.size, options);
  threads.run([&](int rank) {
    Ledger ledger;
    auto comm = threads.communicator(rank, &ledger);
    body(*comm, &ledger);
  });
}

INSTANTIATE_TEST_SUITE_P(Local, CommContract,
                         ::testing::Values(ContractWorld{"self", 1}, ContractWorld{"threads", 1}, ContractWorld{"threads", 2},
                                           ContractWorld{"threads", 3}, ContractWorld{"threads", 4},
                                           ContractWorld{"self", 1, Determinism::kFast},
                                           ContractWorld{"threads", 3, Determinism::kFast}),
                         contract_world_name);
}  // namespace testing

namespace {

std::string world_name(const ::testing::TestParamInfo<int>& p) { return "world" + std::to_string(p.param); }

class ThreadComm : public ::testing::TestWithParam<int> {
 protected:
  int world() const { return GetParam(); }
};

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
// Every rank's error when rank `odd` issues an all_gather and the others a reduce_scatter.
std::vector<std::string> mismatched_collectives(int n, int odd, CommOptions options) {
  ThreadWorld world(n, options);
  std::vector<std::string> messages(n);
  world.run([&](int rank) {
    auto comm = world.communicator(rank);
    std::vector<float> big(n * 8, 1.0f), small(8, 1.0f);
    try {
      if (rank == odd) {
        comm->all_gather(small, big);
      } else {
        comm->reduce_scatter(big, small);
      }
    } catch (const CommError& e) {
      messages[rank] = e.what();
    }
  });
  return messages;
}

TEST_P(ThreadCommFailure, DifferentCollectivesOnDifferentRanksFail) {
  const int n = world();
  const std::vector<std::string> messages = mismatched_collectives(n, n - 1, options_with_timeout(20s));
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(messages[r].find("timed out"), std::string::npos) << "found at the rendezvous, not by the timeout: " << messages[r];
    EXPECT_NE(messages[r].find("different"), std::string::npos) << "rank " << r << ": " << messages[r];
    EXPECT_NE(messages[r].find("all_gather"), std::string::npos) << messages[r];
    EXPECT_NE(messages[r].find("reduce_scatter"), std::string::npos) << messages[r];
  }
}

// Who catches the mismatch names the mode: deterministic mode's order check, before the
// transport runs ("at collective 1 of this communicator"); fast mode has no order check, so the
// threads transport's own rendezvous catches it ("ranks issued different collectives: rank 0").
TEST_P(ThreadCommFailure, FastModeLeavesMismatchesToTheTransport) {
  const int n = world();
  for (Determinism mode : {Determinism::kDeterministic, Determinism::kFast}) {
    SCOPED_TRACE(determinism_name(mode));
    CommOptions options = options_with_timeout(20s);
    options.determinism = mode;
    const std::vector<std::string> messages = mismatched_collectives(n, 0, options);
    for (int r = 0; r < n; ++r) {
      const bool by_order_check = messages[r].find("at collective 1 of this communicator") != std::string::npos;
      EXPECT_EQ(by_order_check, mode == Determinism::kDeterministic) << "rank " << r << ": " << messages[r];
      if (mode == Determinism::kFast) {
        EXPECT_NE(messages[r].find("[comm] ranks issued different collectives: rank 0 all_gather"), std::string::npos) << messages[r];
      }
    }
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
