// The disk tier's file I/O alone: round trips of every size and offset (aligned or not, whole
// blocks and tails), many requests in flight, the buffered fallback on tmpfs, and the errors
// (a full file system, a folder that cannot be written) naming the path. Bytes written are read
// back through POSIX reads, not through the code under test.
#include <fcntl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "io/async_file.h"
#include "io/swap_folder.h"

namespace zero::io {
namespace {

namespace fs = std::filesystem;

// An aligned byte buffer (O_DIRECT wants the address aligned too).
struct Bytes {
  explicit Bytes(std::size_t size) : n(size), p(static_cast<char*>(std::aligned_alloc(kDirectAlignment, (size / kDirectAlignment + 1) * kDirectAlignment))) {}
  ~Bytes() { std::free(p); }
  std::size_t n;
  char* p;
};

// A fresh folder on the disk the tests run on (the build tree's file system, ext4 here), or on /dev/shm (tmpfs).
fs::path scratch(const char* base, const std::string& name) {
  const fs::path dir = fs::path(base) / cat("zero-io-test-", ::getpid(), "-", name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<char> read_posix(const fs::path& file, std::uint64_t offset, std::size_t n) {
  std::vector<char> out(n);
  const int fd = ::open(file.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::pread(fd, out.data(), n, static_cast<off_t>(offset)), static_cast<ssize_t>(n));
  ::close(fd);
  return out;
}

bool on_tmpfs(const fs::path& dir) {
  struct statfs st {};
  return ::statfs(dir.c_str(), &st) == 0 && st.f_type == 0x01021994;  // TMPFS_MAGIC
}

void fill_random(char* p, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<char>(rng());
}

// Sizes around the block and alignment edges; offsets aligned and not; a small block size so
// that a request spans several chunks and several are in flight.
void round_trips(const fs::path& dir, bool expect_direct) {
  IoOptions o;
  o.block_size = 8192;
  o.queue_depth = 4;
  const fs::path file = dir / "swap";
  AsyncFile f(file.string(), o, true);
  EXPECT_EQ(f.direct(), expect_direct);
  unsigned seed = 1;
  for (std::size_t n : {1ul, 511ul, 4096ul, 4097ul, 8191ul, 8192ul, 12288ul, 40000ul, 65536ul + 100}) {
    for (std::uint64_t offset : {0ul, 4096ul, 100ul, 8192ul * 3 + 7}) {
      Bytes out(n), in(n);
      fill_random(out.p, n, seed++);
      f.wait(f.write(offset, out.p, n));
      EXPECT_EQ(read_posix(file, offset, n), std::vector<char>(out.p, out.p + n)) << n << " bytes at " << offset;
      std::memset(in.p, 0, n);
      f.wait(f.read(offset, in.p, n));
      ASSERT_EQ(std::memcmp(in.p, out.p, n), 0) << n << " bytes at " << offset;
      // from an unaligned address too
      f.wait(f.read(offset, in.p + 1, n - 1));
      ASSERT_EQ(std::memcmp(in.p + 1, out.p, n - 1), 0) << n - 1 << " bytes at " << offset << " into an unaligned buffer";
    }
  }
}

TEST(AsyncFile, RoundTripsOnDisk) {
  const fs::path dir = scratch(".", "disk");
  if (on_tmpfs(dir)) GTEST_SKIP() << "the build folder is on tmpfs";
  round_trips(dir, true);
  fs::remove_all(dir);
}

// /dev/shm: tmpfs, which takes O_DIRECT since Linux 6.6 and refuses it before.
TEST(AsyncFile, RoundTripsOnTmpfs) {
  const fs::path dir = scratch("/dev/shm", "tmpfs");
  ASSERT_TRUE(on_tmpfs(dir));
  const int probe = ::open((dir / "probe").c_str(), O_RDWR | O_CREAT | O_DIRECT, 0600);
  if (probe >= 0) ::close(probe);
  round_trips(dir, probe >= 0);
  fs::remove_all(dir);
}

// A file system that refuses O_DIRECT (ramfs; tmpfs before Linux 6.6): buffered I/O, said once.
// The folder comes from io_fallback.sh, which mounts a ramfs in a mount namespace of its own.
TEST(AsyncFile, BufferedFallbackWithOneLine) {
  const char* where = std::getenv("ZERO_TEST_NO_DIRECT_DIR");
  if (where == nullptr) GTEST_SKIP() << "run by tests/io/io_fallback.sh, which mounts a file system without O_DIRECT";
  const fs::path dir = scratch(where, "fallback");
  testing::internal::CaptureStderr();
  round_trips(dir, false);
  { AsyncFile again((dir / "second").string(), IoOptions{}, true); }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("does not take O_DIRECT"), std::string::npos) << err;
  EXPECT_EQ(err.find("O_DIRECT"), err.rfind("O_DIRECT")) << "said more than once: " << err;
  fs::remove_all(dir);
}

// 64 requests in flight at once, of 3 chunks each, through a queue of 8: each lands where asked.
TEST(AsyncFile, ManyRequestsInFlight) {
  const fs::path dir = scratch(".", "many");
  IoOptions o;
  o.block_size = 4096;
  o.queue_depth = 8;
  constexpr std::size_t kRequest = 3 * 4096, kCount = 64;
  Bytes out(kRequest * kCount), in(kRequest * kCount);
  fill_random(out.p, out.n, 7);
  AsyncFile f((dir / "swap").string(), o, true);
  std::vector<AsyncFile::Ticket> tickets;
  for (std::size_t i = 0; i < kCount; ++i) tickets.push_back(f.write((kCount - 1 - i) * kRequest, out.p + (kCount - 1 - i) * kRequest, kRequest));
  for (std::size_t i = kCount; i-- > 0;) f.wait(tickets[i]);
  for (std::size_t i = 0; i < kCount; ++i) f.read(i * kRequest, in.p + i * kRequest, kRequest);
  f.wait_all();
  EXPECT_EQ(std::memcmp(in.p, out.p, out.n), 0);
  EXPECT_EQ(f.bytes_written(), out.n);
  EXPECT_EQ(f.bytes_read(), out.n);
  fs::remove_all(dir);
}

TEST(AsyncFile, ReadPastTheEndNamesTheFile) {
  const fs::path dir = scratch("/dev/shm", "short");
  AsyncFile f((dir / "swap").string(), IoOptions{}, true);
  Bytes b(4096);
  try {
    f.wait(f.read(0, b.p, 4096));
    FAIL() << "a read of an empty file succeeded";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "swap").string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ends before"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A file system that fills: a 1 MiB tmpfs would need root and a mount; /dev/full takes no
// bytes (ENOSPC) on every write, which is what a full disk answers.
TEST(AsyncFile, FullDiskIsAnErrorNamingThePath) {
  AsyncFile f("/dev/full", IoOptions{}, false);
  Bytes b(8192);
  std::memset(b.p, 1, b.n);
  try {
    f.wait(f.write(0, b.p, b.n));
    FAIL() << "a write to /dev/full succeeded";
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("/dev/full"), std::string::npos) << m;
    EXPECT_NE(m.find("file system is full"), std::string::npos) << m;
  }
}

TEST(AsyncFile, UncreatableFileNamesThePath) {
  try {
    AsyncFile f("/nonexistent-zero-folder/swap", IoOptions{}, true);
    FAIL() << "created a file in a missing folder";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-zero-folder/swap"), std::string::npos) << e.what();
  }
}

TEST(SwapFolder, OwnFolderPerRankRemovedAfterwards) {
  const fs::path dir = scratch("/dev/shm", "folders");
  std::string a, b;
  {
    SwapFolder r0(dir.string(), 0), r1(dir.string(), 1), again(dir.string(), 0);
    a = r0.path();
    b = r1.path();
    EXPECT_NE(a, b);
    EXPECT_NE(a, again.path());
    EXPECT_TRUE(fs::is_directory(a));
    EXPECT_EQ(remove_stale_swap_folders(dir.string()), 0) << "a live folder taken for stale";
  }
  EXPECT_FALSE(fs::exists(a));
  EXPECT_FALSE(fs::exists(b));
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

// A folder left by a killed run (its lock file unlocked, a swap file in it) is removed by the
// next run; a folder that is not zero's is not touched.
TEST(SwapFolder, StaleFolderIsReplaced) {
  const fs::path dir = scratch("/dev/shm", "stale");
  fs::create_directories(dir / "zero-swap-999999-0-rank0");
  std::ofstream(dir / "zero-swap-999999-0-rank0" / "lock").put('x');
  std::ofstream(dir / "zero-swap-999999-0-rank0" / "optimizer.swap") << "old state";
  fs::create_directories(dir / "mine");
  testing::internal::CaptureStderr();
  {
    SwapFolder r0(dir.string(), 0);
    EXPECT_FALSE(fs::exists(dir / "zero-swap-999999-0-rank0"));
    EXPECT_TRUE(fs::exists(dir / "mine"));
  }
  EXPECT_NE(testing::internal::GetCapturedStderr().find("removed the stale swap folder"), std::string::npos);
  fs::remove_all(dir);
}

TEST(SwapFolder, BadPathsAreClearErrors) {
  const fs::path dir = scratch("/dev/shm", "bad");
  std::ofstream(dir / "a-file").put('x');
  const auto message = [](const std::string& path) {
    try {
      check_nvme_path(path);
    } catch (const IoError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message((dir / "missing").string()).find("No such file"), std::string::npos);
  EXPECT_NE(message((dir / "a-file").string()).find("is not a folder"), std::string::npos);
  EXPECT_NE(message("/proc/self").find("is not writable"), std::string::npos) << message("/proc/self");
  EXPECT_NE(message("").find("is missing"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace zero::io
