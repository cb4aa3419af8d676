// The owner of a save directory: DirectoryLock and lock_save_directory (checkpoint/directory.h).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include "checkpoint/directory.h"
#include "common/input_file.h"

namespace zero::checkpoint {
namespace fs = std::filesystem;
namespace {

// Set by a launching process that holds a directory's lock while mpirun runs: its holder line.
constexpr const char* kHolderEnv = "ZERO_SAVE_LOCK_HOLDER";

// This process's locks by canonical directory: thread ranks and the launcher share one.
std::mutex locks_mutex;
std::map<std::string, std::weak_ptr<DirectoryLock>> locks;

// What the lock file holds, and another run's message quotes.
std::string holder_line() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "an unknown host");
  return cat("zero train on host ", host, ", pid ", ::getpid());
}

std::string read_holder(int fd) {
  char buf[512] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

void write_holder(int fd, const std::string& line, const std::string& path) {
  const std::string text = line + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    throw CheckpointError(cat("[checkpoint] cannot write the lock file ", path, ": ", std::strerror(errno),
                              ". Check that the directory is writable"));
  }
}

// The lock file opened (created if missing) without following a symlink or blocking on a FIFO.
int open_lock_file(const std::string& path, bool across_exec) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | (across_exec ? 0 : O_CLOEXEC), 0644);
  if (fd < 0) {
    const int err = errno;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      throw CheckpointError(cat("[checkpoint] cannot open the lock file ", path, ": it is ", file_type_name(st.st_mode),
                                ". Remove it (zero creates it), or save to another directory"));
    }
    throw CheckpointError(cat("[checkpoint] cannot open the lock file ", path, ": ", std::strerror(err),
                              ". Check that the directory is writable, or save to another directory"));
  }
  return fd;
}

}  // namespace

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::shared_ptr<DirectoryLock> lock_save_directory(const std::string& dir, bool across_exec) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw CheckpointError(cat("[checkpoint] cannot use --save ", dir, ": ", ec ? ec.message() : "it is not a directory",
                              ". Give a directory that can be created and written"));
  }
  const std::string key = fs::canonical(dir, ec).string();
  const std::lock_guard<std::mutex> guard(locks_mutex);
  if (std::shared_ptr<DirectoryLock> held = locks[key].lock()) return held;
  const std::string path = (fs::path(dir) / "lock").string();
  auto lock = std::make_shared<DirectoryLock>(dir, open_lock_file(path, across_exec));
  const int fd = lock->fd();
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw CheckpointError(cat("[checkpoint] the lock file ", path, " is ", file_type_name(st.st_mode),
                              ", not a regular file: remove it (zero creates it), or save to another directory"));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = read_holder(fd);
    const char* launcher = std::getenv(kHolderEnv);
    if (err == EWOULDBLOCK && launcher && !holder.empty() && holder == launcher) {
      locks[key] = lock;  // this job's launcher holds it (mpirun's parent) for the whole job
      return lock;
    }
    if (err == EWOULDBLOCK) {
      throw CheckpointError(cat("[checkpoint] --save ", dir, " is in use by another run (", holder.empty() ? "its holder is not named" : holder,
                                ", holds ", path, "): two runs saving into one directory overwrite and prune each other's ",
                                "checkpoints. Wait for that run to end, or save to another directory"));
    }
    throw CheckpointError(cat("[checkpoint] cannot lock ", path, ": ", std::strerror(err),
                              ". The file system may not support locks: save to a local directory"));
  }
  const std::string line = holder_line();
  write_holder(fd, line, path);
  if (across_exec) ::setenv(kHolderEnv, line.c_str(), 1);
  locks[key] = lock;
  return lock;
}

}  // namespace zero::checkpoint
