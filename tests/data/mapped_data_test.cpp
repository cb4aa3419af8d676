// A data file costs the ranks of a host one copy, the page cache's: it is mapped read-only and
// shared, and byte tokens are the text's own bytes (issue 21: 1 GiB of text cost each rank
// 3 GiB of its own memory). And a file changed under a running job is an error naming the file,
// never a SIGBUS.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/error_of.h"
#include "common/mapped_file.h"
#include "data/batches.h"
#include "data/load.h"
#include "data/token_file.h"

namespace zero::data {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

// Anonymous (private) resident memory of this process, from /proc/self/status: what a copy of
// the data would cost. A shared file mapping's pages are RssFile, not RssAnon.
std::int64_t rss_anon_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoll(line.substr(8)) * 1024;
  }
  return -1;
}

// Whether /proc/self/maps has a mapping of `path` that holds `address`.
bool mapped_from(const std::string& path, const void* address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  while (std::getline(maps, line)) {
    if (line.size() < path.size() || line.compare(line.size() - path.size(), path.size(), path) != 0) continue;
    std::uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && at >= lo && at < hi) return true;
  }
  return false;
}

class MappedData : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::canonical(fs::path(::testing::TempDir())) / cat("zero_mapped_test_", ::getpid(), "_", info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }
  fs::path dir_;
};

std::string prose(std::size_t bytes) {
  const std::string line = "The quick brown fox jumps over the lazy dog; caf\xC3\xA9 na\xC3\xAFve.\n";
  std::string s;
  s.reserve(bytes);
  while (s.size() + line.size() <= bytes) s += line;
  return s;
}

TEST_F(MappedData, TextCostsNoPrivateCopy) {
  const std::string path = write("big.txt", prose(std::size_t{48} << 20));
  const std::int64_t before = rss_anon_bytes();
  const TokenData data = load_tokens(path);
  const std::int64_t grown = rss_anon_bytes() - before;
  ASSERT_EQ(data.tokens.size(), fs::file_size(path));
  // Read into a string and tokenised into uint16, it cost 3x its size; mapped, nothing of its own.
  EXPECT_LT(grown, std::int64_t{4} << 20) << "loading 48 MiB of text grew private memory by " << grown << " bytes";
  EXPECT_EQ(data.mapped_bytes, fs::file_size(path));
  EXPECT_EQ(data.private_bytes, 0u);
  EXPECT_TRUE(mapped_from(path, data.tokens.bytes()));
  EXPECT_EQ(data.tokens[1], 'h');
}

TEST_F(MappedData, TokenFileCostsNoPrivateCopy) {
  std::vector<std::uint16_t> tokens(std::size_t{16} << 20);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::uint16_t>((i * 7919) % 50257);
  write_token_file((dir_ / "big.bin").string(), tokens);
  const std::string path = (dir_ / "big.bin").string();
  const std::int64_t before = rss_anon_bytes();
  const TokenData data = load_tokens(path);
  const std::int64_t grown = rss_anon_bytes() - before;
  ASSERT_EQ(data.tokens.size(), tokens.size());
  EXPECT_LT(grown, std::int64_t{4} << 20) << "loading a 32 MiB token file grew private memory by " << grown << " bytes";
  EXPECT_TRUE(mapped_from(path, data.tokens.bytes()));
  EXPECT_EQ(data.tokens[12345], tokens[12345]);
  EXPECT_EQ(data.tokens.last(3).to_vector(), std::vector<std::uint16_t>(tokens.end() - 3, tokens.end()));
}

TEST_F(MappedData, ProcFilesAreReadIntoMemory) {
  const TokenData proc = load_tokens("/proc/self/status", "text");  // size 0 on stat: not mappable
  EXPECT_GT(proc.private_bytes, 0u);
  EXPECT_EQ(proc.mapped_bytes, 0u);
}

// What a running job sees: batches over the training split of the file.
struct Job {
  TokenData data;
  TokenSplit split;
  TokenBatches batches;
  explicit Job(const std::string& path) : data(load_tokens(path)), split(split_tokens(data, 0.1, 16)), batches(split.train, 16, 3) {}
  void read_batch(std::int64_t step) const {
    std::vector<std::int32_t> in(8 * 16), tgt(in.size());
    batches.fill(step, 0, 8, in.data(), tgt.data());
  }
};

TEST_F(MappedData, TruncatedUnderARunningJobIsAnErrorNotSigbus) {
  const std::string path = write("data.txt", prose(1 << 20));
  const Job job(path);
  job.read_batch(0);
  fs::resize_file(path, 4096);  // what `cp new.txt data.txt` does first
  const std::string msg = error_of([&] {
    for (int step = 1; step < 100; ++step) job.read_batch(step);
  });
  EXPECT_NE(msg.find(cat("[data] data file ", path, " changed while this run was reading it")), std::string::npos) << msg;
  EXPECT_NE(msg.find("now 4096 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--resume"), std::string::npos) << msg;
}

TEST_F(MappedData, RewrittenInPlaceWithTheSameSizeIsAnError) {
  const std::string path = write("data.txt", prose(1 << 20));
  const Job job(path);
  std::string other = prose(1 << 20);
  std::fill(other.begin(), other.end(), 'x');
  write("data.txt", other);
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(2));  // a coarse clock cannot hide it
  EXPECT_NE(error_of([&] { job.read_batch(1); }).find("changed while this run was reading it"), std::string::npos);
}

TEST_F(MappedData, ReplacedByRenameKeepsReadingTheOldFile) {
  const std::string path = write("data.txt", prose(1 << 20));
  const Job job(path);
  std::vector<std::int32_t> in(8 * 16), tgt(in.size()), in2(in.size()), tgt2(in.size());
  job.batches.fill(5, 0, 8, in.data(), tgt.data());
  const std::string fresh = write("fresh.txt", std::string(1 << 20, 'y'));
  fs::rename(fresh, path);  // the safe way to publish new data
  job.batches.fill(5, 0, 8, in2.data(), tgt2.data());
  EXPECT_EQ(in, in2);
  EXPECT_EQ(tgt, tgt2);
}

TEST_F(MappedData, TruncatedDuringACopyIsAnErrorNotSigbus) {
  // The file shrinks after read()'s check and before the copy touches the bytes: the SIGBUS the
  // access raises is turned into the same error.
  const std::string path = write("data.txt", prose(std::size_t{1} << 20));
  const MappedFile file(InputFile{.path = path, .component = "data", .role = "data file"});
  volatile unsigned char sink = 0;
  const std::string msg = error_of([&] {
    file.read([&] {
      if (::truncate(path.c_str(), 0) != 0) std::abort();
      sink = file.data()[file.size() - 1];
    });
  });
  EXPECT_NE(msg.find(cat("[data] data file ", path, " changed while this run was reading it")), std::string::npos) << msg;
  EXPECT_NE(msg.find("now 0 bytes"), std::string::npos) << msg;
  // The handler is ours only for guarded reads of a mapping; the process goes on normally.
  EXPECT_EQ(sink, 0);
}

TEST_F(MappedData, SigbusOutsideAGuardedReadStillEndsTheProcess) {
  // The handler is ours only for reads of a mapping through read(): any other SIGBUS does what it
  // did before (here: the default action, the process ends by the signal).
  const std::string path = write("data.txt", prose(std::size_t{1} << 20));
  EXPECT_EXIT(
      {
        const MappedFile file(InputFile{.path = path, .component = "data", .role = "data file"});
        file.read([] {});  // installs the handler
        if (::truncate(path.c_str(), 0) != 0) std::abort();
        volatile unsigned char sink = file.data()[file.size() - 1];
        (void)sink;
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

}  // namespace
}  // namespace zero::data
