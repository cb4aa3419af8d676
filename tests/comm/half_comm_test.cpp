// 16-bit collectives (bf16, f16), on thread ranks and, built as half_comm_mpi_test, under
// mpirun: every element is widened, added in f32 in rank order and rounded once, in one piece or
// many; all_reduce is that sum everywhere; the bytes on the wire are half of f32's.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "comm/communicator.h"
#include "comm/thread_world.h"
#include "comm_test_util.h"
#include "common/dtype.h"

namespace zero {
namespace {

using testing::rank_input;

// (n) 16-bit bits of rank's input (rounded to nearest even).
std::vector<std::uint16_t> half_input(int rank, std::size_t n, Dtype d, int salt) {
  const auto f = rank_input(rank, n, salt);
  std::vector<std::uint16_t> h(n);
  narrow_from_f32(f.data(), d, h.data(), n);
  return h;
}

// The documented sum, written plainly: widen, add in f32 in rank order, round once. With
// `round_each`, the wrong rule (round after every addition), to show the inputs tell them apart.
std::vector<std::uint16_t> half_sum(int world, std::size_t n, Dtype d, int salt, bool round_each = false) {
  std::vector<float> acc(n), x(n);
  auto h = half_input(0, n, d, salt);
  widen_to_f32(h.data(), d, acc.data(), n);
  for (int r = 1; r < world; ++r) {
    h = half_input(r, n, d, salt);
    widen_to_f32(h.data(), d, x.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      acc[i] += x[i];
      if (round_each) {
        std::uint16_t b;
        narrow_from_f32(&acc[i], d, &b, 1);
        widen_to_f32(&b, d, &acc[i], 1);
      }
    }
  }
  std::vector<std::uint16_t> out(n);
  narrow_from_f32(acc.data(), d, out.data(), n);
  return out;
}

// One rank's checks; every rank of `comm` runs it.
void check_rank(Communicator& comm) {
  const int n = comm.size(), rank = comm.rank();
  for (Dtype d : {Dtype::kBf16, Dtype::kF16})
    // the mpi transport's chunks (backends.h): 65537, two of 64 KiB and one element; 524289, four of 131073
    for (std::size_t k : {1, 5, 1500, 65537, 524289})
      for (std::size_t segment : {0, 1, 7}) {
        if (k > 1500 && (segment != 0 || d != Dtype::kBf16)) continue;  // one big case: a piece per element would take minutes
        SCOPED_TRACE(::testing::Message() << dtype_label(d) << " k=" << k << " segment=" << segment);
        const auto send = half_input(rank, n * k, d, 3);
        const auto expected = half_sum(n, n * k, d, 3);
        std::vector<std::uint16_t> recv(k, 0xFFFF);
        const Traffic before = comm.traffic();
        comm.reduce_scatter_async(send.data(), recv.data(), k, d, segment).wait();
        const Traffic t = comm.traffic() - before;
        EXPECT_EQ(std::memcmp(recv.data(), expected.data() + static_cast<std::size_t>(rank) * k, k * 2), 0);
        EXPECT_EQ(t.sent[static_cast<int>(Collective::kReduceScatter)], 2 * k * static_cast<std::size_t>(n - 1)) << "2 bytes each";
        std::vector<std::uint16_t> data = send;
        comm.all_reduce_async(data.data(), data.size(), d, segment).wait();
        EXPECT_EQ(data, expected);
        std::vector<std::uint16_t> gathered(n * k);
        comm.all_gather_async(send.data() + static_cast<std::size_t>(rank) * k, gathered.data(), k, d, segment).wait();
        for (int r = 0; r < n; ++r) {
          const auto theirs = half_input(r, n * k, d, 3);
          EXPECT_EQ(std::memcmp(gathered.data() + r * k, theirs.data() + r * k, k * 2), 0) << "rank " << r << "'s slot";
        }
      }
}

TEST(HalfCollectives, RoundOnceDiffersFromRoundingEachAddition) {
  for (Dtype d : {Dtype::kBf16, Dtype::kF16}) EXPECT_NE(half_sum(4, 3000, d, 3), half_sum(4, 3000, d, 3, true)) << dtype_label(d);
}

TEST(HalfCollectives, SumInF32InRankOrderRoundedOnce) {
  int mpi_size = 0;
  if (launched_by_mpi(&mpi_size)) {
    static auto comm = make_communicator("mpi", {std::chrono::seconds(60), nullptr});
    check_rank(*comm);
    return;
  }
  for (int n : {1, 2, 3, 4}) {
    ThreadWorld world(n);
    world.run([&](int r) {
      auto comm = world.communicator(r);
      check_rank(*comm);
    });
  }
}

}  // namespace
}  // namespace zero
