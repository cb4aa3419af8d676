// The split and window arithmetic swept over file sizes, world sizes and micro-batches (issue
// 12: files of 11.5-82 KB stopped with an internal error in the validation windows, smaller
// ones lost their validation loss, and a val_fraction near 0 or 1 spun forever).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "data/batches.h"

namespace zero::data {
namespace {

TokenData counting_tokens(std::size_t n) {
  std::vector<std::uint16_t> tokens(n);
  for (std::size_t i = 0; i < n; ++i) tokens[i] = static_cast<std::uint16_t>(i % 251);
  return tokens_in_memory(std::move(tokens), 256, "sweep.txt", "text");
}

// Every rank runs the same number of passes, each of at most B real windows, and together the
// ranks' real windows are every window exactly once.
void expect_passes_cover(int windows, int ranks, int B) {
  const int passes = validation_passes(windows, ranks, B);
  std::vector<int> seen(windows, 0);
  for (int r = 0; r < ranks; ++r) {
    for (int p = 0; p < passes; ++p) {
      const SequenceRange s = validation_pass(windows, ranks, r, B, p);
      ASSERT_TRUE(s.count >= 0 && s.count <= B && s.first >= 0 && s.first + s.count <= windows)
          << windows << " windows, " << ranks << " ranks, B " << B << ", pass " << p;
      for (int i = 0; i < s.count; ++i) ++seen[s.first + i];
    }
  }
  for (int w = 0; w < windows; ++w) ASSERT_EQ(seen[w], 1) << "window " << w << " of " << windows << ", " << ranks << " ranks, B " << B;
}

TEST(ValidationPasses, CoverEveryWindowOnceForAnyCountRanksAndMicroBatch) {
  for (int windows = 1; windows <= 70; ++windows)
    for (int ranks = 1; ranks <= 5; ++ranks)
      for (int B = 1; B <= 9; ++B) expect_passes_cover(windows, ranks, B);
  EXPECT_EQ(validation_passes(39, 1, 8), 5);  // the 50,000-byte file of the issue: 39 windows
  EXPECT_EQ(validation_passes(3, 4, 8), 1);   // a rank with no window still runs the pass
  EXPECT_EQ(validation_pass(3, 4, 0, 8, 0).count, 0);  // batch_slice(3, 4, 0) is empty
}

TEST(ValidationPasses, PaddedRowsRepeatWindowZero) {
  const TokenData data = counting_tokens(1000);
  const ValidationWindows windows(data.tokens, 10, 0);
  std::vector<std::int32_t> in(4 * 10), tgt(in.size()), one(10), one_tgt(10), zero(10), zero_tgt(10);
  windows.fill_padded(7, 2, 4, in.data(), tgt.data());
  windows.fill(8, 1, one.data(), one_tgt.data());
  windows.fill(0, 1, zero.data(), zero_tgt.data());
  EXPECT_TRUE(std::equal(one.begin(), one.end(), in.begin() + 10));
  EXPECT_TRUE(std::equal(zero.begin(), zero.end(), in.begin() + 20));
  EXPECT_TRUE(std::equal(zero_tgt.begin(), zero_tgt.end(), tgt.begin() + 30));
}

// What the trainer does with a file of n tokens: split it, draw the first step's sequences for
// every rank, and spread the validation windows (at most 64, as TrainOptions asks) over the ranks.
void expect_file_trains(std::size_t n, double val_fraction, int T, int B, int ranks) {
  const TokenData data = counting_tokens(n);
  const TokenSplit split = split_tokens(data, val_fraction, T);
  const TokenBatches batches(split.train, T, 1234);
  std::vector<std::int32_t> in(static_cast<std::size_t>(B) * T), tgt(in.size());
  for (int r = 0; r < ranks; ++r) {
    const SequenceRange mine = batch_slice(B * ranks, ranks, r);
    batches.fill(0, mine.first, mine.count, in.data(), tgt.data());
  }
  ASSERT_EQ(split.validation.empty(), val_fraction == 0.0) << n << " tokens";
  if (split.validation.empty()) return;
  const ValidationWindows windows(split.validation, T, 64);
  ASSERT_GE(windows.count(), 1);
  expect_passes_cover(windows.count(), ranks, B);
  for (int r = 0; r < ranks; ++r) {
    for (int p = 0; p < validation_passes(windows.count(), ranks, B); ++p) {
      const SequenceRange s = validation_pass(windows.count(), ranks, r, B, p);
      windows.fill_padded(s.first, s.count, B, in.data(), tgt.data());  // in range, or the check stops the test
    }
  }
}

TEST(SplitSweep, EveryFileSizeUpTo100KBTrainsAndValidatesOnOneTwoThreeRanks) {
  constexpr int T = 64;  // zero train's default context; B = 8 is its micro-batch, 4 the demo's
  for (double val_fraction : {0.05, 0.1, 0.0}) {
    const std::int64_t smallest = min_split_tokens(val_fraction, T);
    EXPECT_THROW(split_tokens(counting_tokens(static_cast<std::size_t>(smallest - 1)), val_fraction, T), Error);
    for (std::size_t n = static_cast<std::size_t>(smallest); n <= 100 * 1024; n += 97)
      for (int B : {8, 4})
        for (int ranks : {1, 2, 3}) expect_file_trains(n, val_fraction, T, B, ranks);
  }
}

TEST(SplitSweep, SmallestFileIsExactlyWhatBothSplitsNeed) {
  EXPECT_EQ(min_split_tokens(0.0, 64), 65);
  EXPECT_EQ(min_split_tokens(0.05, 64), 1300);  // 65 validation tokens
  EXPECT_EQ(min_split_tokens(0.5, 64), 130);
  EXPECT_EQ(min_split_tokens(0.9, 64), 641);    // 641 - floor(576.9) = 65 training tokens
  for (double f : {0.01, 0.05, 0.123, 0.5, 0.77, 0.99}) {
    for (int T : {1, 7, 64, 1000}) {
      const std::int64_t n = min_split_tokens(f, T);
      EXPECT_NO_THROW(split_tokens(counting_tokens(static_cast<std::size_t>(n)), f, T)) << f << " " << T;
      EXPECT_THROW(split_tokens(counting_tokens(static_cast<std::size_t>(n - 1)), f, T), Error) << f << " " << T;
    }
  }
}

// The answer is computed in closed form: a search over file sizes would take minutes at 1e-9
// (over 64e9 tokens) and CTest's timeout would stop it; no wall-clock bound is asserted here.
TEST(SplitSweep, ValFractionNearZeroOrOneAnswersAtOnce) {
  for (double f : {1e-300, 1e-17, 1e-9, 1 - 1e-9, 1 - 1e-15, std::nextafter(1.0, 0.0)}) {
    std::string message;
    try {
      split_tokens(counting_tokens(1000), f, 64);
    } catch (const Error& e) {
      message = e.what();
    }
    const std::int64_t n = min_split_tokens(f, 64);
    if (n > 0) {
      EXPECT_NE(message.find(cat("needs at least ", n, " tokens")), std::string::npos) << message;
    } else {
      EXPECT_NE(message.find("no file is long enough: use a val_fraction further from 0 and 1"), std::string::npos) << message;
    }
  }
  EXPECT_GT(min_split_tokens(1e-9, 64), 64'000'000'000);  // 65 validation tokens at 1e-9
  EXPECT_EQ(min_split_tokens(1e-300, 64), -1);
}

}  // namespace
}  // namespace zero::data
