// 1-bit Adam's compressed all-reduce (engine/compressed_all_reduce.h) on thread ranks against an
// independent NumPy model of the same algorithm (compressed_all_reduce_reference.py): the same
// float32 operations in the same order, so the outputs must be equal exactly, over several calls
// (the error feedback carried between them), at 2 to 5 ranks (odd counts sit a rank out of each
// pairing round) and tensor sizes that do not divide by the ranks. And the bytes each rank sends
// per call, counted by the communicators, equal the formula computed here.
#include "engine/compressed_all_reduce.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "common/error.h"
#include "comm/thread_world.h"

namespace zero {
namespace {

constexpr int kCalls = 3;

// A deterministic input per (call, rank, element): mixed signs and magnitudes, and a run of
// exact zeros (1 bit cannot say 0: the error feedback must carry it).
float input(int call, int rank, std::size_t i) {
  std::uint64_t x = (static_cast<std::uint64_t>(call) * 1000003u + static_cast<std::uint64_t>(rank) * 7919u + i) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  if (i % 97 < 5) return 0.0f;
  const float u = static_cast<float>(x % 20001) / 10000.0f - 1.0f;  // [-1, 1]
  return u * (1.0f + static_cast<float>(i % 7));
}

struct Case {
  int ranks;
  std::vector<std::size_t> sizes;
};

std::string name_of(const Case& c) {
  std::string s = cat("ranks", c.ranks);
  for (std::size_t n : c.sizes) s += cat("_", n);
  return s;
}

// gtest prints the parameter beside the test's name: its name, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << name_of(c); }

// Per-rank bytes sent per call, from the formula (not from the class): 2 (N-1) (B + 4 T), B the
// bytes of one chunk of every tensor, each tensor padded to a multiple of N lcm(N, 8).
std::uint64_t formula_bytes(const Case& c) {
  const std::size_t n = static_cast<std::size_t>(c.ranks), quantum = n * std::lcm(n, std::size_t{8});
  std::uint64_t block = 0;
  for (std::size_t size : c.sizes) block += (size + quantum - 1) / quantum * quantum / n / 8;
  return 2ull * (n - 1) * (block + 4 * c.sizes.size());
}

class CompressedAllReduceTest : public ::testing::TestWithParam<Case> {};

TEST_P(CompressedAllReduceTest, EqualsNumpyAndSendsTheFormulasBytes) {
  const Case& c = GetParam();
  const std::size_t total = std::accumulate(c.sizes.begin(), c.sizes.end(), std::size_t{0});
  const std::size_t per_call = static_cast<std::size_t>(c.ranks) * total;
  std::vector<float> inputs(kCalls * per_call), outputs(kCalls * per_call);
  std::vector<std::uint64_t> sent(c.ranks);
  ThreadWorld world(c.ranks);
  world.run([&](int r) {
    auto comm = world.communicator(r);
    CompressedAllReduce reducer(*comm, c.sizes);
    std::vector<float> worker(reducer.worker_error_size()), server(reducer.server_error_size());
    for (int k = 0; k < kCalls; ++k) {
      float* in = inputs.data() + k * per_call + static_cast<std::size_t>(r) * total;
      float* out = outputs.data() + k * per_call + static_cast<std::size_t>(r) * total;
      for (std::size_t i = 0; i < total; ++i) in[i] = out[i] = input(k, r, i);
      std::vector<std::span<float>> tensors;
      for (std::size_t at = 0, t = 0; t < c.sizes.size(); at += c.sizes[t], ++t) tensors.emplace_back(out + at, c.sizes[t]);
      const std::uint64_t before = comm->traffic().total_sent() + reducer.pair_traffic().total_sent();
      reducer.run(tensors, worker, server);
      if (k == kCalls - 1) sent[r] = comm->traffic().total_sent() + reducer.pair_traffic().total_sent() - before;
    }
  });
  for (int r = 0; r < c.ranks; ++r) EXPECT_EQ(sent[r], formula_bytes(c)) << "rank " << r;
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / cat("compressed_ar_", name_of(c));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream meta(dir / "meta.txt");
    meta << "ranks " << c.ranks << "\ncalls " << kCalls << "\nsizes";
    for (std::size_t n : c.sizes) meta << ' ' << n;
    meta << '\n';
    std::ofstream(dir / "inputs.f32", std::ios::binary).write(reinterpret_cast<const char*>(inputs.data()), static_cast<std::streamsize>(inputs.size() * 4));
    std::ofstream(dir / "outputs.f32", std::ios::binary).write(reinterpret_cast<const char*>(outputs.data()), static_cast<std::streamsize>(outputs.size() * 4));
  }
  const std::string command = cat("/usr/bin/python3 ", ZERO_TEST_SOURCE_DIR, "/engine/compressed_all_reduce_reference.py ", dir.string());
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

INSTANTIATE_TEST_SUITE_P(Sweep, CompressedAllReduceTest,
                         ::testing::Values(Case{2, {1, 16, 1000}}, Case{3, {7, 500}}, Case{4, {33, 4097}}, Case{5, {2, 1003}},
                                           Case{8, {100}}),
                         [](const ::testing::TestParamInfo<Case>& p) { return name_of(p.param); });

TEST(CompressedAllReduce, PadsAsDeepSpeedDoes) {
  // DeepSpeed: a multiple of N * lcm(N, 8) (OnebitAdam's size * divider)
  EXPECT_EQ(CompressedAllReduce::padded_size(1, 2), 16u);
  EXPECT_EQ(CompressedAllReduce::padded_size(16, 2), 16u);
  EXPECT_EQ(CompressedAllReduce::padded_size(17, 2), 32u);
  EXPECT_EQ(CompressedAllReduce::padded_size(7, 3), 72u);
  EXPECT_EQ(CompressedAllReduce::padded_size(65, 8), 128u);
}

}  // namespace
}  // namespace zero
