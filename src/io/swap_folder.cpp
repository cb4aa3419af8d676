#include "io/swap_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "io/async_file.h"

namespace zero::io {

namespace {

namespace fs = std::filesystem;
constexpr const char* kPrefix = "zero-swap-";

std::atomic<int> folders_made{0};

// True when `folder`'s lock is free: its owner has died. A folder without a lock file yet is
// being made by a live run, and is left alone.
bool stale(const fs::path& folder) {
  const int fd = ::open((folder / "lock").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);  // releases the lock taken to test it
  return free;
}

}  // namespace

void check_nvme_path(const std::string& nvme_path) {
  const std::string key = "offload nvme_path";
  if (nvme_path.empty()) throw IoError(cat("[io] ", key, " is missing: name a folder on a fast local disk for the swap files"));
  struct stat st {};
  if (::stat(nvme_path.c_str(), &st) != 0)
    throw IoError(cat("[io] ", key, " ", nvme_path, ": ", std::strerror(errno), "; create the folder or name another"));
  if (!S_ISDIR(st.st_mode)) throw IoError(cat("[io] ", key, " ", nvme_path, " is not a folder; name a folder for the swap files"));
  // A folder made and removed says more than access() (which lets root pass on any folder).
  const std::string probe = cat(nvme_path, "/.zero-probe-", ::getpid(), "-", folders_made++);
  if (::mkdir(probe.c_str(), 0700) != 0)
    throw IoError(cat("[io] ", key, " ", nvme_path, " is not writable (", std::strerror(errno), "); name a folder you can write in"));
  ::rmdir(probe.c_str());
}

int remove_stale_swap_folders(const std::string& nvme_path) {
  int removed = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(nvme_path, ec)) {
    if (!e.is_directory(ec) || e.path().filename().string().rfind(kPrefix, 0) != 0 || !stale(e.path())) continue;
    fs::remove_all(e.path(), ec);
    if (ec) continue;  // another run removed it first
    std::fprintf(stderr, "zero: [io] removed the stale swap folder %s (left by a run that did not finish; never read)\n",
                 e.path().c_str());
    ++removed;
  }
  return removed;
}

// The folder is made under a name the stale check does not look at, locked, and only then
// renamed to its zero-swap- name (atomically): another run never sees it unlocked.
SwapFolder::SwapFolder(const std::string& nvme_path, int rank) {
  check_nvme_path(nvme_path);
  remove_stale_swap_folders(nvme_path);
  const int n = folders_made++;
  const std::string making = cat(nvme_path, "/.zero-making-", ::getpid(), "-", n);
  if (::mkdir(making.c_str(), 0700) != 0) throw IoError(cat("[io] cannot make a swap folder in ", nvme_path, ": ", std::strerror(errno)));
  lock_fd_ = ::open((making + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  const std::string target = cat(nvme_path, "/", kPrefix, ::getpid(), "-", n, "-rank", rank);
  if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX) != 0 || ::rename(making.c_str(), target.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    if (lock_fd_ >= 0) ::close(lock_fd_);
    std::error_code ec;
    fs::remove_all(making, ec);
    throw IoError(cat("[io] cannot make the swap folder ", target, ": ", why));
  }
  path_ = target;
}

SwapFolder::~SwapFolder() {
  std::error_code ec;
  fs::remove_all(path_, ec);  // the lock file with it; then the lock itself
  ::close(lock_fd_);
}

}  // namespace zero::io
