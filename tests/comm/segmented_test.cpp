// Segmented collectives (src/comm/segmented.cpp): a collective cut into pieces of s elements per
// rank must give the same bits as one unsegmented call, write nothing outside its buffers, and
// hold exactly scratch_bytes() of comm_buffers at its peak. Swept over world sizes 1..5, sizes
// k from 0 to 40 (primes; k < s, k == s, k == s+1) and segments 1, 2, 3, 7 and 0 (the
// backend's limit: one piece), on the "threads" backend; mpi_comm_test repeats it under mpirun.
// Also the piece arithmetic alone, and the MPI limit's arithmetic.
#include "comm/segmented.h"

#include <gtest/gtest.h>

#include <climits>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "comm/backends.h"
#include "comm/communicator.h"
#include "comm/thread_world.h"
#include "comm_test_util.h"
#include "common/error.h"
#include "memory/ledger.h"
#include "segmented_check.h"

namespace zero {
namespace {

using testing::rank_input;

// --- The arithmetic alone ---------------------------------------------------------------------

TEST(SegmentPieces, CoverEveryElementOnceInOrder) {
  for (std::size_t s : {1, 2, 3, 7, 64}) {
    for (std::size_t k = 0; k <= 50; ++k) {
      const Pieces p = split_into_pieces(k, s);
      EXPECT_EQ(p.count, k == 0 ? 1u : (k + s - 1) / s) << "k " << k << " s " << s;
      std::size_t next = 0;
      for (std::size_t j = 0; j < p.count; ++j) {
        EXPECT_EQ(p.offset(j), next);
        EXPECT_LE(p.length(j), s);
        if (k > 0) {
          EXPECT_GE(p.length(j), 1u);
        }
        next += p.length(j);
      }
      EXPECT_EQ(next, k) << "k " << k << " s " << s;
      EXPECT_EQ(p.largest(), std::min(k, s));
    }
  }
  EXPECT_EQ(split_into_pieces(7, 7).count, 1u);
  EXPECT_EQ(split_into_pieces(8, 7).count, 2u);
  EXPECT_EQ(split_into_pieces(8, 7).length(1), 1u);
  const std::size_t huge = static_cast<std::size_t>(-1);
  EXPECT_EQ(split_into_pieces(huge, huge).count, 1u) << "ceil(k/s) must not overflow";
  EXPECT_THROW(split_into_pieces(5, 0), std::logic_error);
}

// MPI's counts are ints. A slice of 3e9 floats (12 GB, above INT_MAX elements and bytes) needs
// two pieces; elements of 1, 2, 4 (and 8) bytes are counted one each, a 12-byte record as three
// 4-byte units.
TEST(SegmentPieces, MpiLimitArithmetic) {
  const std::size_t int_max = static_cast<std::size_t>(INT_MAX);
  for (std::size_t element_bytes : {1, 2, 4, 8}) {
    SCOPED_TRACE(::testing::Message() << element_bytes << "-byte elements");
    const std::size_t s = max_segment_elements(element_bytes, int_max);
    EXPECT_EQ(s, int_max);
    const Pieces p = split_into_pieces(3'000'000'000ull, s);
    EXPECT_EQ(p.count, 2u);
    EXPECT_EQ(p.length(0), int_max);
    EXPECT_EQ(p.length(1), 3'000'000'000ull - int_max);
    EXPECT_EQ(split_into_pieces(int_max, s).count, 1u);
    EXPECT_EQ(split_into_pieces(int_max + 1, s).count, 2u);
  }
  EXPECT_EQ(max_segment_elements(12, int_max), int_max / 3);
  EXPECT_EQ(max_segment_elements(3, int_max), int_max / 3);
  EXPECT_EQ(max_segment_elements(6, 10), 3u) << "6 bytes: three 2-byte units";
  EXPECT_EQ(max_segment_elements(3, 2), 1u) << "at least one element";
}

// The mpi transport's receive ring (backends.h), worked by hand: chunks of at most 1 MiB, a piece
// under 4 MiB cut into up to 4 of at least 64 KiB, at most 4 in flight a peer; the scratch is
// slots x chunk a peer (the planner's figure), and an all-reduce has one only where it exchanges.
TEST(SegmentPieces, MpiRingArithmetic) {
  struct Case {
    std::size_t k, element_bytes, chunk, chunks, slots;
  };
  for (const Case& c : {Case{0, 4, 0, 0, 0}, Case{1, 4, 1, 1, 1}, Case{16384, 4, 16384, 1, 1}, Case{16385, 4, 16384, 2, 2},
                        Case{100003, 4, 25001, 4, 4}, Case{262144, 4, 65536, 4, 4}, Case{1048576, 4, 262144, 4, 4},
                        Case{1048577, 4, 262144, 5, 4}, Case{65537, 2, 32768, 3, 3}, Case{524289, 2, 131073, 4, 4},
                        Case{2621441, 2, 524288, 6, 4}}) {
    SCOPED_TRACE(::testing::Message() << "k " << c.k << ", " << c.element_bytes << "-byte elements");
    const detail::MpiRing ring = detail::mpi_reduce_scatter_ring(c.k, c.element_bytes);
    EXPECT_EQ(ring.chunk, c.chunk);
    EXPECT_EQ(ring.chunks, c.chunks);
    EXPECT_EQ(ring.slots, c.slots);
  }
  using detail::mpi_transport_scratch_bytes;
  EXPECT_EQ(mpi_transport_scratch_bytes(Collective::kReduceScatter, 16385, 4, 3), 2u * 2 * 16384 * 4);  // 2 slots, 2 peers
  EXPECT_EQ(mpi_transport_scratch_bytes(Collective::kReduceScatter, 1048577, 4, 2), 4u * 262144 * 4);   // the ring's cap
  EXPECT_EQ(mpi_transport_scratch_bytes(Collective::kAllReduce, 50000, 4, 2), 4u * 25000 * 4);        // the exchange: 2 x 50000
  EXPECT_EQ(mpi_transport_scratch_bytes(Collective::kAllReduce, 50000, 4, 3), 0u);                    // no exchange on 3 ranks
  EXPECT_EQ(mpi_transport_scratch_bytes(Collective::kReduceScatter, 3, 2, 2), 8u);                    // 6 bytes, whole floats
}

// --- The sweep on thread ranks ----------------------------------------------------------------

using testing::check_every_collective;
using testing::kSegmentSweepSizes;
using testing::pieces_of;
int idx(Collective c) { return static_cast<int>(c); }

// Runs fn(comm, ledger) on every rank of a world of n threads, each rank with its own ledger.
void run_with_ledgers(int n, std::size_t segment_elements, const std::function<void(Communicator&, Ledger&)>& fn) {
  CommOptions o;
  o.timeout = std::chrono::seconds(20);
  o.segment_elements = segment_elements;
  ThreadWorld world(n, o);
  world.run([&](int r) {
    Ledger ledger;
    auto comm = world.communicator(r, &ledger);
    fn(*comm, ledger);
  });
}

class SegmentedThreads : public ::testing::TestWithParam<std::tuple<int, std::size_t>> {};

TEST_P(SegmentedThreads, EveryCollectiveMatchesUnsegmentedBits) {
  const auto [n, s] = GetParam();
  run_with_ledgers(n, 0, [&, s = s](Communicator& comm, Ledger& ledger) {
    for (std::size_t k : kSegmentSweepSizes) {
      SCOPED_TRACE(::testing::Message() << "rank " << comm.rank() << " k " << k << " segment " << s);
      check_every_collective(comm, ledger, k, s);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(WorldsAndSegments, SegmentedThreads,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5), ::testing::Values<std::size_t>(1, 2, 3, 7, 0)),
                         [](const auto& p) {
                           return "world" + std::to_string(std::get<0>(p.param)) + "_segment" + std::to_string(std::get<1>(p.param));
                         });

// The segment comes from CommOptions::segment_elements unless a call names its own.
TEST(SegmentedOptions, OptionsSegmentAppliesAndACallOverridesIt) {
  const int n = 3;
  const std::size_t k = 10;
  run_with_ledgers(n, 3, [&](Communicator& c, Ledger&) {
    Communicator* comm = &c;
    const int r = c.rank();
    EXPECT_EQ(comm->segment_elements(), 3u);
    EXPECT_EQ(comm->segment_elements(4), 4u);
    EXPECT_EQ(comm->scratch_bytes(Collective::kReduceScatter, k), n * 3 * sizeof(float));
    EXPECT_EQ(comm->scratch_bytes(Collective::kReduceScatter, 3), 0u) << "one piece: no packing";
    EXPECT_EQ(comm->scratch_bytes(Collective::kBarrier, k), 0u);
    auto data = rank_input(r, n * k, 40);
    const Traffic before = comm->traffic();
    comm->all_reduce(data);     // options: pieces of 3
    comm->all_reduce(data, 4);  // the call's own: pieces of 4
    const Traffic t = comm->traffic() - before;
    EXPECT_EQ(t.pieces[idx(Collective::kAllReduce)], 2 * 4u + 2 * 3u);
    EXPECT_EQ(t.calls[idx(Collective::kAllReduce)], 2u);
  });
}

// all_gather_bytes counts its segment in bytes: a 10-byte record in pieces of 3 bytes.
TEST(SegmentedOptions, AllGatherBytesInPieces) {
  const int n = 4;
  run_with_ledgers(n, 3, [&](Communicator& c, Ledger&) {
    Communicator* comm = &c;
    const int r = c.rank();
    char mine[10];
    for (int i = 0; i < 10; ++i) mine[i] = static_cast<char>('a' + r * 10 + i);
    std::vector<char> all(n * 10 + 2, '#');
    const Traffic before = comm->traffic();
    comm->all_gather_bytes(mine, sizeof mine, all.data() + 1);
    const Traffic t = comm->traffic() - before;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < 10; ++i) EXPECT_EQ(all[1 + j * 10 + i], static_cast<char>('a' + j * 10 + i)) << j << " " << i;
    EXPECT_EQ(all.front(), '#');
    EXPECT_EQ(all.back(), '#');
    EXPECT_EQ(t.pieces[idx(Collective::kAllGather)], 4u);
    EXPECT_EQ(t.calls[idx(Collective::kAllGather)], 1u);
    EXPECT_EQ(t.sent[idx(Collective::kAllGather)], (n - 1) * 10u);
  });
}

// The self backend runs the same piece loops (its transport is a copy).
TEST(SegmentedSelf, EveryCollectiveMatchesInPieces) {
  for (std::size_t s : {1, 2, 3, 7, 0}) {
    Ledger ledger;
    CommOptions o;
    o.ledger = &ledger;
    auto comm = make_communicator("self", o);
    for (std::size_t k : kSegmentSweepSizes) {
      SCOPED_TRACE(::testing::Message() << "k " << k << " segment " << s);
      check_every_collective(*comm, ledger, k, s);
    }
  }
}

}  // namespace
}  // namespace zero
