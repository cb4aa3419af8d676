// A rank's scratch folder on the disk tier: <nvme_path>/zero-swap-<pid>-<n>-rank<r>, made at
// the start of a run and removed with everything in it when the owner is destroyed (also when
// the run fails, as the exception unwinds). Two ranks, or two runs, never share one: the pid and
// a process-wide count tell them apart.
//
// A run killed before it could clean up leaves its folder behind. Each folder holds a `lock`
// file its owner keeps locked (flock) while alive, and the kernel drops the lock when the process
// dies however it dies; so a folder whose lock can be taken is stale, and is removed (said on
// stderr) when the next run makes its own. Nothing in a stale folder is ever read.
#pragma once

#include <string>

namespace zero::io {

class SwapFolder {
 public:
  // IoError when nvme_path is missing, not a folder, or not writable.
  SwapFolder(const std::string& nvme_path, int rank);
  ~SwapFolder();
  SwapFolder(const SwapFolder&) = delete;
  SwapFolder& operator=(const SwapFolder&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
  int lock_fd_ = -1;
};

// Throws IoError unless `nvme_path` is an existing folder this process can create files in:
// the check a run makes before any rank starts.
void check_nvme_path(const std::string& nvme_path);

// Removes the stale swap folders in `nvme_path` (those whose owner has died); returns how many.
int remove_stale_swap_folders(const std::string& nvme_path);

}  // namespace zero::io
