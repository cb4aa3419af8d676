// The segmented-collective check shared by the threads/self sweep (segmented_test.cpp) and the
// mpi one (mpi_comm_test.cpp): one property, every backend.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "comm/segmented.h"
#include "comm_test_util.h"
#include "memory/ledger.h"

namespace zero::testing {

inline constexpr std::uint32_t kGuardBits = 0x7fbadbadu;  // a NaN no collective produces
inline constexpr std::size_t kGuard = 5;                   // guard elements each side of a buffer
inline constexpr std::size_t kSegmentSweepSizes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 13, 14, 17, 23, 29, 37, 40};

// (kGuard + n + kGuard) f32: a buffer whose outside is guards.
struct Guarded {
  explicit Guarded(std::size_t size) : all(size + 2 * kGuard, std::bit_cast<float>(kGuardBits)), n(size) {}
  std::span<float> inner() { return std::span<float>(all).subspan(kGuard, n); }
  std::vector<float> copy() const { return {all.begin() + kGuard, all.begin() + kGuard + n}; }
  bool guards_intact() const {
    for (std::size_t i = 0; i < all.size(); ++i)
      if ((i < kGuard || i >= kGuard + n) && std::bit_cast<std::uint32_t>(all[i]) != kGuardBits) return false;
    return true;
  }
  std::vector<float> all;
  std::size_t n;
};

inline std::size_t pieces_of(std::size_t k, std::size_t s) { return s == 0 ? 1 : split_into_pieces(k, s).count; }

// Runs one collective and checks that the comm_buffers peak rose by scratch_bytes().
template <class Run>
void expect_scratch(Communicator& comm, Ledger& ledger, Collective kind, std::size_t k, std::size_t s, Run run) {
  ledger.reset_peaks();
  const std::uint64_t before = ledger.current(Tier::kDevice, Category::kCommBuffers);
  run();
  EXPECT_EQ(ledger.current(Tier::kDevice, Category::kCommBuffers), before) << collective_name(kind) << ": scratch returned";
  EXPECT_EQ(ledger.peak(Tier::kDevice, Category::kCommBuffers) - before, comm.scratch_bytes(kind, k, s))
      << collective_name(kind) << " of k " << k << " in segments of " << s;
}

// Every collective of k elements per rank in segments of s, checked against the rank-order
// reference: the bits inside, the guards outside, the scratch, the traffic.
inline void check_every_collective(Communicator& comm, Ledger& ledger, std::size_t k, std::size_t s) {
  const int n = comm.size(), rank = comm.rank();
  const int salt = static_cast<int>(k * 16 + s);
  const Traffic before = comm.traffic();
  const auto expected = sum_in_rank_order(n, n * k, salt);

  const auto send = rank_input(rank, n * k, salt);
  Guarded recv(k);
  expect_scratch(comm, ledger, Collective::kReduceScatter, k, s, [&] { comm.reduce_scatter(send, recv.inner(), s); });
  EXPECT_TRUE(bits_equal(recv.copy(), slot(expected, rank, k))) << "reduce_scatter";
  EXPECT_TRUE(recv.guards_intact()) << "reduce_scatter wrote outside recv";
  EXPECT_TRUE(bits_equal(send, rank_input(rank, n * k, salt))) << "reduce_scatter changed send";

  Guarded in_place(n * k);
  std::copy(send.begin(), send.end(), in_place.inner().begin());
  comm.reduce_scatter(in_place.inner(), in_place.inner().subspan(rank * k, k), s);
  for (int j = 0; j < n; ++j)
    EXPECT_TRUE(bits_equal(slot(in_place.copy(), j, k), slot(j == rank ? expected : send, j, k))) << "in place, slot " << j;
  EXPECT_TRUE(in_place.guards_intact()) << "in-place reduce_scatter";

  const auto mine = rank_input(rank, k, salt + 1);
  Guarded gathered(n * k);
  expect_scratch(comm, ledger, Collective::kAllGather, k, s, [&] { comm.all_gather(mine, gathered.inner(), s); });
  for (int j = 0; j < n; ++j) EXPECT_TRUE(bits_equal(slot(gathered.copy(), j, k), rank_input(j, k, salt + 1))) << "all_gather slot " << j;
  EXPECT_TRUE(gathered.guards_intact()) << "all_gather wrote outside recv";

  Guarded gathered_in_place(n * k);
  std::copy(mine.begin(), mine.end(), gathered_in_place.inner().begin() + rank * k);
  comm.all_gather(gathered_in_place.inner().subspan(rank * k, k), gathered_in_place.inner(), s);
  for (int j = 0; j < n; ++j)
    EXPECT_TRUE(bits_equal(slot(gathered_in_place.copy(), j, k), rank_input(j, k, salt + 1))) << "in place, slot " << j;
  EXPECT_TRUE(gathered_in_place.guards_intact()) << "in-place all_gather";

  Guarded reduced(n * k);
  std::copy(send.begin(), send.end(), reduced.inner().begin());
  expect_scratch(comm, ledger, Collective::kAllReduce, k, s, [&] { comm.all_reduce(reduced.inner(), s); });
  EXPECT_TRUE(bits_equal(reduced.copy(), expected)) << "all_reduce";
  EXPECT_TRUE(reduced.guards_intact()) << "all_reduce wrote outside data";

  const int root = static_cast<int>(k % n);
  Guarded sent(k);
  const auto mine_bc = rank_input(rank, k, salt + 2);
  std::copy(mine_bc.begin(), mine_bc.end(), sent.inner().begin());
  expect_scratch(comm, ledger, Collective::kBroadcast, k, s, [&] { comm.broadcast(sent.inner(), root, s); });
  EXPECT_TRUE(bits_equal(sent.copy(), rank_input(root, k, salt + 2))) << "broadcast from " << root;
  EXPECT_TRUE(sent.guards_intact()) << "broadcast wrote outside data";

  // Bytes as unsegmented; calls one per collective issued; pieces one per transport call.
  const Traffic t = comm.traffic() - before;
  const auto idx = [](Collective c) { return static_cast<int>(c); };
  const std::uint64_t piece = static_cast<std::uint64_t>(n - 1) * k * sizeof(float);
  const std::uint64_t p = pieces_of(k, s);
  EXPECT_EQ(t.calls[idx(Collective::kReduceScatter)], 2u);
  EXPECT_EQ(t.pieces[idx(Collective::kReduceScatter)], 2 * p);
  EXPECT_EQ(t.sent[idx(Collective::kReduceScatter)], 2 * piece);
  EXPECT_EQ(t.calls[idx(Collective::kAllGather)], 2u);
  EXPECT_EQ(t.pieces[idx(Collective::kAllGather)], 2 * p);
  EXPECT_EQ(t.received[idx(Collective::kAllGather)], 2 * piece);
  EXPECT_EQ(t.calls[idx(Collective::kAllReduce)], 1u);
  // a reduce_scatter and an all_gather phase, or in one piece the transport's own exchange
  EXPECT_EQ(t.pieces[idx(Collective::kAllReduce)], p == 1 && comm.exchanges_all_reduce() ? 1 : 2 * p);
  EXPECT_EQ(t.sent[idx(Collective::kAllReduce)], 2 * piece);
  EXPECT_EQ(t.calls[idx(Collective::kBroadcast)], 1u);
  EXPECT_EQ(t.pieces[idx(Collective::kBroadcast)], p);
  EXPECT_EQ(t.received[idx(Collective::kBroadcast)], rank == root ? 0u : k * sizeof(float));
}

}  // namespace zero::testing
