// The data-size sweep of data_sizes_test.cpp over real MPI processes (mpirun -np 2 and -np 3), on
// fewer sizes: from the smallest allowed file, through the 11.5-82 KB range that used to stop with
// an internal error, to 100 KB.
#include <gtest/gtest.h>

#include <unistd.h>

#include "common/error.h"
#include "train/data_sizes.h"

namespace zero {
namespace {

Communicator& world() {
  static std::unique_ptr<Communicator> comm = make_communicator("mpi", {std::chrono::seconds(60), nullptr});
  return *comm;
}

TEST(DataSizesMpi, SizesUpTo100KBTrainWithAValidationLoss) {
  Communicator& comm = world();
  constexpr double kValFraction = 0.05;
  // Each rank writes its own copy: no rank reads a file another is still writing.
  const std::string path = (std::filesystem::temp_directory_path() /
                            cat("zero_data_sizes_mpi_", ::getpid(), "_rank", comm.rank(), ".txt")).string();
  for (std::size_t bytes : testing::sweep_sizes(kValFraction, 7919, 100 * 1024)) {
    testing::write_text_file(path, testing::license_prefix(bytes));
    const testing::SizeResult r = testing::train_on_size(comm, bytes, path, kValFraction);
    EXPECT_EQ(testing::sweep_failure(r, kValFraction), "") << "rank " << comm.rank() << " of " << comm.size();
  }
  std::filesystem::remove(path);
}

// Processes that read different data (here the last rank's file has one byte changed) stop at
// start-up, each with the error naming the file; the same contents on every rank train.
TEST(DataIdentityMpi, ProcessesThatReadDifferentDataStop) {
  Communicator& comm = world();
  constexpr std::size_t kBytes = 20000;
  const std::string path = (std::filesystem::temp_directory_path() /
                            cat("zero_data_identity_mpi_", ::getpid(), "_rank", comm.rank(), ".txt")).string();
  for (bool differ : {true, false}) {
    testing::write_text_file(path, testing::rank_text(kBytes, differ && comm.rank() == comm.size() - 1, kBytes / 3));
    const std::string error = testing::train_on_size(comm, kBytes, path, 0.05).error;
    if (differ) EXPECT_NE(error.find("[data] the ranks read different data from "), std::string::npos) << error;
    else EXPECT_EQ(error, "");
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace zero
