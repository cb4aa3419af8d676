// The communicator contract (comm_contract.h), run unchanged over every transport: each
// reduction is the rank-order sum (bit for bit; fast mode: within any order's error bound),
// gathers and broadcasts move exact bytes, async handles may be waited in any order, wrong sizes
// are refused before anything is issued, the traffic counters show the bandwidth-optimal bytes
// (the same in both modes), and the scratch a collective holds is what scratch_bytes() predicts.
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm_contract.h"

namespace zero::testing {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr std::size_t kSizes[] = {0, 1, 5, 1500};  // elements per rank; 1500 crosses the 1024-element sum tile

int idx(Collective c) { return static_cast<int>(c); }

TEST_P(CommContract, IdentityOfEachRank) {
  on_every_rank([&](Communicator& comm, Ledger*) {
    EXPECT_EQ(comm.backend(), GetParam().backend);
    EXPECT_EQ(comm.size(), GetParam().size);
    EXPECT_EQ(comm.determinism(), GetParam().determinism);
    std::vector<int> ranks(comm.size(), -1);  // every rank a different number, together 0..N-1
    const int mine = comm.rank();
    comm.all_gather_bytes(&mine, sizeof mine, ranks.data());
    for (int j = 0; j < comm.size(); ++j) EXPECT_EQ(ranks[j], j);
  });
}

// Guards the bit-equality tests: with 3+ ranks, another order would change the bits.
TEST_P(CommContract, InputsTellSummationOrdersApart) {
  const int n = GetParam().size;
  if (n < 3) GTEST_SKIP() << "two addends commute exactly";
  const std::size_t count = 4096;
  EXPECT_GT(count_bit_differences(sum_in_rank_order(n, count, 1), sum_in_reverse_order(n, count, 1)), count / 10);
  const auto reverse = sum_in_reverse_order(n, count, 1);  // and fast mode's bound admits another order
  EXPECT_TRUE(is_rank_sum(reverse, n, count, 1, 0, Determinism::kFast));
}

TEST_P(CommContract, ReduceScatterSumsInRankOrder) {
  on_every_rank([&](Communicator& comm, Ledger*) {
    const std::size_t n = comm.size();
    for (std::size_t k : kSizes) {
      SCOPED_TRACE(::testing::Message() << "k = " << k);
      const auto send = rank_input(comm.rank(), n * k, 2);
      std::vector<float> recv(k, kNaN);
      comm.reduce_scatter(send, recv);
      EXPECT_TRUE(is_rank_sum(recv, n, n * k, 2, comm.rank() * k, comm.determinism()));
      EXPECT_TRUE(bits_equal(send, rank_input(comm.rank(), n * k, 2))) << "send must not change";
    }
  });
}

TEST_P(CommContract, ReduceScatterInPlace) {
  on_every_rank([&](Communicator& comm, Ledger*) {
    const std::size_t n = comm.size(), k = 1500, r = comm.rank();
    auto data = rank_input(comm.rank(), n * k, 3);
    comm.reduce_scatter(data, std::span<float>(data).subspan(r * k, k));
    const auto original = rank_input(comm.rank(), n * k, 3);
    for (std::size_t j = 0; j < n; ++j) {
      if (j == r) {
        EXPECT_TRUE(is_rank_sum(slot(data, j, k), n, n * k, 3, r * k, comm.determinism())) << "own slot";
      } else {
        EXPECT_TRUE(bits_equal(slot(data, j, k), slot(original, j, k))) << "slot " << j << " must not change";
      }
    }
  });
}

TEST_P(CommContract, AllGatherConcatenatesInRankOrder) {
  on_every_rank([&](Communicator& comm, Ledger*) {
    const std::size_t n = comm.size();
    for (std::size_t k : kSizes) {
      SCOPED_TRACE(::testing::Message() << "k = " << k);
      const auto send = rank_input(comm.rank(), k, 4);
      std::vector<float> recv(n * k, kNaN);
      comm.all_gather(send, recv);
      for (std::size_t j = 0; j < n; ++j) EXPECT_TRUE(bits_equal(slot(recv, j, k), rank_input(j, k, 4))) << "slot " << j;
    }
  });
}

TEST_P(CommContract, AllGatherInPlace) {
  on_every_rank([&](Communicator& comm, Ledger*) {
    const std::size_t n = comm.size(), k = 33, r = comm.rank();
    std::vector<float> data(n * k, kNaN);
    const auto mine = rank_input(comm.rank(), k, 5);
    std::copy(mine.begin(), mine.end(), data.begin() + r * k);
    comm.all_gather(std::span<const float>(data).subspan(r * k, k), data);
    for (std::size_t j = 0; j < n; ++j) EXPECT_TRUE(bits_equal(slot(data, j, k), rank_input(j, k, 5))) << "slot " << j;
  });
}

TEST_P(CommContract, AllReduceGivesEveryRankTheRankOrderSum) {
  on_every_rank([&](Communicator& comm, Ledger*) {
    const std::size_t n = comm.size();
    for (std::size_t k : kSizes) {
      SCOPED_TRACE(::testing::Message() << "k = " << k);
      auto data = rank_input(comm.rank(), n * k, 6);
      comm.all_reduce(data);
      EXPECT_TRUE(is_rank_sum(data, n, n * k, 6, 0, comm.determinism()));
    }
  });
}

// In pieces (a segment far below the transport's limit): the same sums as one call.
TEST_P(CommContract, SegmentedReductionsAreTheSameSums) {
  on_every_rank([&](Communicator& comm, Ledger*) {
    const std::size_t n = comm.size(), k = 1100, r = comm.rank();
    for (std::size_t s : {1, 7, 512}) {
      SCOPED_TRACE(::testing::Message() << "segment " << s);
      auto data = rank_input(comm.rank(), n * k, 8);
      comm.all_reduce(data, s);
      EXPECT_TRUE(is_rank_sum(data, n, n * k, 8, 0, comm.determinism()));
      const auto send = rank_input(comm.rank(), n * k, 9);
      std::vector<float> recv(k, kNaN);
      comm.reduce_scatter(send, recv, s);
      EXPECT_TRUE(is_rank_sum(recv, n, n * k, 9, r * k, comm.determinism()));
    }
  });
}

TEST_P(CommContract, BroadcastFromEveryRoot) {
  on_every_rank([&](Communicator& comm, Ledger*) {
    const std::size_t k = 17;
    for (int root = 0; root < comm.size(); ++root) {
      auto data = rank_input(comm.rank(), k, 7);
      comm.broadcast(data, root);
      EXPECT_TRUE(bits_equal(data, rank_input(root, k, 7))) << "root " << root;
    }
  });
}

// Several collectives in flight at once, issued in one order and waited in another: the comm
// thread still runs them in issue order on every rank, so each result is the plain reference.
TEST_P(CommContract, AsyncHandlesWaitedOutOfOrder) {
  on_every_rank([&](Communicator& comm, Ledger*) {
    const std::size_t n = comm.size(), k = 1100;
    const int r = comm.rank();
    constexpr int kReduces = 4;
    const auto rs_send = rank_input(r, n * k, 10);
    std::vector<float> rs_recv(k, kNaN);
    const auto ag_send = rank_input(r, k, 11);
    std::vector<float> ag_recv(n * k, kNaN);
    auto bc = rank_input(r, k, 12);
    std::vector<std::vector<float>> ar(kReduces);
    for (int i = 0; i < kReduces; ++i) ar[i] = rank_input(r, n * k, 20 + i);

    std::vector<Handle> h;
    h.push_back(comm.reduce_scatter_async(rs_send, rs_recv));
    h.push_back(comm.all_reduce_async(ar[0]));
    h.push_back(comm.all_gather_async(ag_send, ag_recv));
    h.push_back(comm.all_reduce_async(ar[1]));
    h.push_back(comm.barrier_async());
    h.push_back(comm.broadcast_async(bc, static_cast<int>(n) - 1));
    h.push_back(comm.all_reduce_async(ar[2]));
    h.push_back(comm.all_reduce_async(ar[3]));
    for (int i : {5, 2, 7, 0, 4, 1, 6, 3}) {
      ASSERT_TRUE(h[i].valid());
      h[i].wait();
    }
    h[3].wait();  // waiting twice is fine

    EXPECT_TRUE(is_rank_sum(rs_recv, n, n * k, 10, r * k, comm.determinism()));
    for (std::size_t j = 0; j < n; ++j) EXPECT_TRUE(bits_equal(slot(ag_recv, j, k), rank_input(j, k, 11))) << "all_gather slot " << j;
    EXPECT_TRUE(bits_equal(bc, rank_input(static_cast<int>(n) - 1, k, 12)));
    for (int i = 0; i < kReduces; ++i) EXPECT_TRUE(is_rank_sum(ar[i], n, n * k, 20 + i, 0, comm.determinism())) << "all_reduce " << i;
  });
}

// Bytes per kind: reduce_scatter and all_gather of k elements per rank move (N-1)*k*4 bytes
// each way; all_reduce twice that; broadcast: the root sends N-1 copies, the others receive one.
// Fast mode moves the same bytes (the transports' reductions are bandwidth-optimal too).
TEST_P(CommContract, TrafficCountersShowPayloadBytes) {
  on_every_rank([&](Communicator& comm, Ledger*) {
    const std::size_t n = comm.size(), k = 7;
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
    const Traffic t = comm.traffic() - before;
    const std::uint64_t piece = (n - 1) * k * 4, root = comm.rank() == 0 ? piece : 0, leaf = comm.rank() == 0 ? 0 : k * 4;
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
    EXPECT_EQ(t.sent[idx(Collective::kBroadcast)], root);
    EXPECT_EQ(t.received[idx(Collective::kBroadcast)], leaf);
    EXPECT_EQ(t.calls[idx(Collective::kBarrier)], 2u);
    EXPECT_EQ(t.sent[idx(Collective::kBarrier)], 0u);
    EXPECT_EQ(t.total_sent(), 9 * piece + root);
    EXPECT_EQ(t.total_received(), 9 * piece + leaf);
  });
}

TEST_P(CommContract, AllGatherBytesCollectsEveryRanksRecord) {
  on_every_rank([&](Communicator& comm, Ledger*) {
    struct Record {
      std::int32_t rank;
      std::uint64_t fingerprint;
    };
    const Traffic before = comm.traffic();
    const Record mine{comm.rank(), 1000u + static_cast<std::uint64_t>(comm.rank())};
    std::vector<Record> got(comm.size());
    comm.all_gather_bytes(&mine, sizeof mine, got.data());
    const Traffic t = comm.traffic() - before;
    for (int j = 0; j < comm.size(); ++j) {
      EXPECT_EQ(got[j].rank, j);
      EXPECT_EQ(got[j].fingerprint, 1000u + j);
    }
    EXPECT_EQ(t.calls[idx(Collective::kAllGather)], 1u);
    EXPECT_EQ(t.sent[idx(Collective::kAllGather)], (comm.size() - 1) * sizeof(Record));
  });
}

// A collective's scratch (comm_buffers, device tier) is returned, and its peak is what
// scratch_bytes() predicts (the planner's dry run reserves exactly that), in one piece or many.
TEST_P(CommContract, ScratchIsWhatScratchBytesPredicts) {
  if (!GetParam().scratch_predicted) GTEST_SKIP() << "this transport stages host memory: scratch_bytes() does not cover it";
  on_every_rank([&](Communicator& comm, Ledger* ledger) {
    ASSERT_NE(ledger, nullptr);
    const std::size_t n = comm.size(), k = 100;
    for (std::size_t s : {0, 30}) {
      SCOPED_TRACE(::testing::Message() << "segment " << s);
      const auto check = [&](Collective kind, const std::function<void()>& run) {
        ledger->reset_peaks();
        const std::uint64_t before = ledger->current(Tier::kDevice, Category::kCommBuffers);
        run();
        EXPECT_EQ(ledger->current(Tier::kDevice, Category::kCommBuffers), before) << collective_name(kind);
        EXPECT_EQ(ledger->peak(Tier::kDevice, Category::kCommBuffers) - before, comm.scratch_bytes(kind, k, s)) << collective_name(kind);
      };
      auto big = rank_input(comm.rank(), n * k, 13);
      std::vector<float> small(k);
      check(Collective::kReduceScatter, [&] { comm.reduce_scatter(big, small, s); });
      check(Collective::kAllGather, [&] { comm.all_gather(small, big, s); });
      check(Collective::kAllReduce, [&] { comm.all_reduce(big, s); });
    }
  });
}

TEST_P(CommContract, WrongSizesAreRejectedBeforeAnythingIsIssued) {
  on_every_rank([&](Communicator& comm, Ledger*) {
    const std::size_t n = comm.size();
    std::vector<float> big(n * 4 + 1), small(4);
    EXPECT_THROW(comm.reduce_scatter_async(big, small), std::logic_error);
    EXPECT_THROW(comm.all_gather_async(small, big), std::logic_error);
    if (n > 1) {
      EXPECT_THROW(comm.all_reduce_async(std::span<float>(big).first(n + 1)), std::logic_error);
    }
    EXPECT_THROW(comm.broadcast_async(small, comm.size()), std::logic_error);
    EXPECT_THROW(comm.broadcast_async(small, -1), std::logic_error);
    comm.barrier();  // nothing was issued: the world is still in step
  });
}

}  // namespace
}  // namespace zero::testing
