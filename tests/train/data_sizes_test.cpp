// zero::train() starts, and reports a validation loss, on text files of every size from the
// smallest allowed up to 100 KB, on 1, 2 and 3 thread ranks (issue 12: files of 11.5-82 KB used to
// stop with an internal error in the validation windows, smaller ones lost their validation loss).
// The MPI twin, data_sizes_mpi_test.cpp, sweeps fewer sizes over real processes.
#include <gtest/gtest.h>

#include <unistd.h>

#include "comm/thread_world.h"
#include "common/error.h"
#include "train/data_sizes.h"

namespace zero {
namespace {

using testing::SizeResult;

class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("zero_data_sizes_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

SizeResult train_on_threads(int ranks, std::size_t bytes, const std::string& path, double val_fraction) {
  ThreadWorld world(ranks);
  SizeResult first;
  world.run([&](int r) {
    Ledger ledger;
    auto comm = world.communicator(r, &ledger);
    SizeResult mine = testing::train_on_size(*comm, bytes, path, val_fraction);
    if (r == 0) first = mine;
  });
  return first;
}

TEST(DataSizes, EverySizeUpTo100KBTrainsWithAValidationLossOnOneTwoAndThreeRanks) {
  const TempDir dir;
  constexpr double kValFraction = 0.05;  // zero train's default
  const std::vector<std::size_t> sizes = testing::sweep_sizes(kValFraction, 3079, 100 * 1024);
  ASSERT_GT(sizes.size(), 30u);  // the data layer alone is swept every 97 bytes: data_test.cpp
  for (std::size_t bytes : sizes) {
    const std::string path = dir.file("text.txt");
    testing::write_text_file(path, testing::license_prefix(bytes));
    float first_on_one_rank = 0;
    for (int ranks : {1, 2, 3}) {
      const SizeResult r = train_on_threads(ranks, bytes, path, kValFraction);
      ASSERT_EQ(testing::sweep_failure(r, kValFraction), "") << "on " << ranks << " ranks";
      // Before the first step every world has the same weights and evaluates the same windows.
      if (ranks == 1) first_on_one_rank = r.result.first_val_loss;
      EXPECT_NEAR(r.result.first_val_loss, first_on_one_rank, 1e-5 * first_on_one_rank)
          << bytes << " bytes on " << ranks << " ranks";
    }
  }
}

TEST(DataSizes, OneByteShortOfTheSmallestIsRefusedWithWhatItNeeds) {
  const TempDir dir;
  for (double val_fraction : {0.0, 0.05, 0.5}) {
    const std::int64_t smallest = data::min_split_tokens(val_fraction, testing::kSweepSeqLen);
    const std::string path = dir.file("short.txt");
    testing::write_text_file(path, testing::license_prefix(static_cast<std::size_t>(smallest - 1)));
    const SizeResult r = train_on_threads(2, static_cast<std::size_t>(smallest - 1), path, val_fraction);
    EXPECT_NE(r.error.find("shorter than one sequence"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find(cat("needs at least ", smallest, " tokens")), std::string::npos) << r.error;
    testing::write_text_file(path, testing::license_prefix(static_cast<std::size_t>(smallest)));
    EXPECT_EQ(testing::sweep_failure(train_on_threads(2, static_cast<std::size_t>(smallest), path, val_fraction),
                                     val_fraction), "");
  }
}

TEST(DataSizes, WithoutAValidationSplitThereIsNoValidationLoss) {
  const TempDir dir;
  for (std::size_t bytes : testing::sweep_sizes(0.0, 9001, 40000)) {
    const std::string path = dir.file("text.txt");
    testing::write_text_file(path, testing::license_prefix(bytes));
    EXPECT_EQ(testing::sweep_failure(train_on_threads(3, bytes, path, 0.0), 0.0), "");
  }
}

// Ranks that read different data stop at start-up, every one of them, with an error naming the
// file and each rank that differs from rank 0 (once they each trained on their own file without a
// word). Swept over the world size, where the byte differs (first, middle, last) and a file of
// another length; the same file on every rank trains.
TEST(DataIdentity, RanksThatReadDifferentDataStopNamingTheFile) {
  const TempDir dir;
  constexpr std::size_t kBytes = 20000;
  for (int ranks : {2, 3, 4}) {
    for (std::size_t at : {std::size_t{0}, kBytes / 2, kBytes - 1, kBytes}) {
      for (bool differ : {true, false}) {
        std::vector<std::string> errors(ranks);
        ThreadWorld world(ranks);
        world.run([&](int r) {
          Ledger ledger;
          auto comm = world.communicator(r, &ledger);
          const std::string path = dir.file(cat("rank", r, ".txt"));
          testing::write_text_file(path, testing::rank_text(kBytes, differ && r == ranks - 1, at));
          errors[r] = testing::train_on_size(*comm, kBytes, path, 0.05).error;
        });
        for (int r = 0; r < ranks; ++r) {
          SCOPED_TRACE(cat(ranks, " ranks, byte ", at, differ ? ", last rank differs" : ", same data", ", rank ", r));
          if (!differ) {
            EXPECT_EQ(errors[r], "");
            continue;
          }
          EXPECT_NE(errors[r].find("[data] the ranks read different data from "), std::string::npos) << errors[r];
          EXPECT_NE(errors[r].find(cat("rank ", ranks - 1, ": ", at < kBytes ? kBytes : testing::license_prefix(kBytes + 97).size(),
                                       " tokens, sha256 ")), std::string::npos) << errors[r];
          for (int same = 1; same < ranks - 1; ++same) {
            EXPECT_EQ(errors[r].find(cat("rank ", same, ":")), std::string::npos) << "only ranks that differ are named: " << errors[r];
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace zero
