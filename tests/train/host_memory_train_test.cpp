// zero::train() itself checks the host's memory before its first allocation, as the ranks of a
// job that mpirun started directly do (no launching process checked for them): every rank refuses
// with the same numbers, and the ledger shows that nothing was allocated.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "comm/thread_world.h"
#include "common/error.h"
#include "train/data_sizes.h"

namespace zero {
namespace {

namespace fs = std::filesystem;

TEST(TrainHostMemory, EveryRankRefusesBeforeAllocating) {
  const fs::path dir = fs::temp_directory_path() / cat("zero_host_train_", ::getpid());
  fs::create_directories(dir / "proc");
  std::ofstream(dir / "proc/meminfo") << "MemTotal: 999999 kB\nMemAvailable:   102400 kB\n";  // 100 MiB
  const std::string data = (dir / "data.txt").string();
  testing::write_text_file(data, std::string(20000, 'a'));
  ::setenv("ZERO_HOST_ROOT", dir.c_str(), 1);
  ThreadWorld world(2);
  std::vector<std::string> errors(2);
  std::vector<std::uint64_t> peaks(2, 1);
  world.run([&](int r) {
    Ledger ledger;
    auto comm = world.communicator(r, &ledger);
    TrainOptions o;
    o.config = testing::sweep_config(2, 0.0);
    o.data_path = data;
    o.ledger = &ledger;
    try {
      train(o, *comm);
    } catch (const OutOfMemoryError& e) {
      errors[r] = e.what();
    }
    peaks[r] = ledger.usage(Tier::kDevice).total_peak + ledger.usage(Tier::kHost).total_peak;
  });
  ::unsetenv("ZERO_HOST_ROOT");
  fs::remove_all(dir);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(errors[r].find("but this host has 104,857,600 bytes (100.00 MiB) available"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("Needed: 2 ranks on this host x"), std::string::npos) << errors[r];
    EXPECT_EQ(errors[r], errors[0]);
    EXPECT_EQ(peaks[r], 0u) << "rank " << r << " allocated before the check";
  }
}

}  // namespace
}  // namespace zero
