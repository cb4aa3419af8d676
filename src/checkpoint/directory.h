// A save directory (--save DIR) as a whole: its `latest` file, its step-* checkpoints, and its
// owner. One run owns a save directory at a time (DIR/lock, below); a run's checkpoints never mix
// with another history's; and every file of a checkpoint is read through the one input reader
// (common/input_file.h), so a FIFO, a device, a directory or a huge file in a checkpoint's place
// is refused by name instead of hanging a reader or exhausting memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_error.h"

namespace zero::checkpoint {

// Far beyond any manifest zero writes (a 70B-parameter model's is about 10 MB): a longer file is
// not a manifest, and reading it whole would only exhaust memory.
inline constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{256} << 20;

// A small checkpoint file's bytes (manifest.json, latest), read by the one input reader:
// CheckpointError naming the file when it is missing, not a regular file, or over max_bytes.
std::string read_checkpoint_file(const std::string& path, const std::string& role, std::uint64_t max_bytes);

// The step of a checkpoint directory named step-NNNNNNNN, or -1 for any other name.
std::int64_t step_of(const std::string& name);

// The checkpoint name DIR/latest holds, "" when DIR has no `latest`. CheckpointError when
// `latest` is not a regular file, or holds anything but one step-NNNNNNNN name (a path such as
// ../x or /abs would lead the reader out of DIR).
std::string read_latest(const std::string& dir);

// The checkpoint directory `path` names: itself if it holds manifest.json, else the one its
// `latest` file names. CheckpointError when there is none (naming what was looked for).
std::string find_checkpoint(const std::string& path);

// The steps of DIR's complete checkpoints (step-* directories that hold a manifest.json), sorted.
std::vector<std::int64_t> complete_steps(const std::string& dir);

// K when `checkpoint` is save directory `dir`'s own DIR/step-K (the same directory, by inode),
// else -1: resuming from it continues the history of `dir`.
std::int64_t own_step(const std::string& dir, const std::string& checkpoint);

// Why a run may not save into `dir` ("" if it may), from what `dir`'s `latest` has published: a
// fresh run (`resumed` empty) needs a directory without checkpoints; a resumed run may save only
// into the directory it resumed from, and only from its newest checkpoint (resuming DIR/step-K
// while `latest` names a later step would replace it with another history: a new --save
// directory forks it).
std::string check_history(const std::string& dir, const std::string& resumed);

// The advisory lock that makes one run the owner of a save directory: flock(2) on DIR/lock,
// which holds the owner's host and pid for the message another run gets. flock rather than
// fcntl: an fcntl lock belongs to the process and is dropped when it closes *any* descriptor of
// the file (reading the holder's line would release it), and it does not survive into mpirun;
// a flock belongs to the open file description, is kept across exec, and the kernel drops it
// when the holder dies, so a killed run leaves no stale lock. (On NFS, Linux maps flock to an
// fcntl lock on the server, so runs on two hosts exclude each other too.)
class DirectoryLock {
 public:
  DirectoryLock(std::string dir, int fd) : dir_(std::move(dir)), fd_(fd) {}
  ~DirectoryLock();  // closes the descriptor: the kernel releases the lock
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  const std::string& dir() const { return dir_; }
  int fd() const { return fd_; }

 private:
  std::string dir_;
  int fd_;
};

// Takes `dir` (created if missing) for this process, for as long as the returned lock lives;
// a second call for the same directory in this process shares the lock. CheckpointError naming
// the holder when another run has it. `across_exec`: the launching process, which holds the lock
// while its child mpirun runs (mpirun inherits the descriptor) and tells its ranks so
// (ZERO_SAVE_LOCK_HOLDER in the environment): rank 0 of such a job accepts the launcher's lock
// as its own; rank 0 of a job started directly under mpirun takes the lock itself.
std::shared_ptr<DirectoryLock> lock_save_directory(const std::string& dir, bool across_exec = false);

// CheckpointError ("[output] <what> <path> is inside the checkpoint directory ...") when `path`
// lies inside a save directory or a checkpoint: written there, it would overwrite `latest` or a
// checkpoint's file, or be removed with a pruned step.
void check_outside_checkpoints(const std::string& what, const std::string& path);

}  // namespace zero::checkpoint
