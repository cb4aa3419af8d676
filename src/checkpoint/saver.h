// Saving: every rank copies its shard of the optimizer state to host memory (the only time
// training waits), then writes it to its own file on a thread of its own while the next steps
// run. Once every rank's file is complete (one small collective, polled once per step), rank 0
// writes the manifest and then `latest`, each crash-safe: `latest` never names a checkpoint
// with a missing or partial file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/directory.h"
#include "checkpoint/manifest.h"
#include "comm/communicator.h"
#include "engine/engine.h"

namespace zero::checkpoint {

struct SaveOptions {
  std::string dir;          // the save directory: step-* checkpoints and `latest`
  int keep = 0;             // keep the newest K complete checkpoints; 0: all (only this run's history is pruned)
  // The checkpoint the run resumed from; "" for a fresh run. The directory must hold no
  // checkpoints, or be that checkpoint's own directory with nothing newer in it
  // (checkpoint/directory.h: check_history).
  std::string resumed;
  std::uint64_t block_bytes = kDefaultBlockBytes;
};

struct SaveStarted {
  std::int64_t step = 0;
  double stall_seconds = 0;  // training waited this long: the copy of the shard to memory
  std::uint64_t bytes = 0;   // this rank's file
};

struct Published {
  std::int64_t step = 0;
  std::string dir;            // the checkpoint's directory
  double write_seconds = 0;   // the slowest rank's background write
  std::uint64_t bytes = 0;    // all ranks' files
  std::vector<std::string> warnings;  // rank 0's: old checkpoints --keep could not remove
};

// Can rank `rank` save into `dir` (created if missing)? "" if so, else why not: it must be
// writable, and hold no checkpoints of another history (check_history; `resumed` as in
// SaveOptions). Saver runs it on every rank; the launching process runs it before mpirun.
std::string check_save_directory(const std::string& dir, int rank, const std::string& resumed);

class Saver {
 public:
  // Checks at start-up that `dir` can be written (creating it), on every rank, and rank 0 takes
  // the directory (lock_save_directory; shared with a launcher that holds it): CheckpointError
  // (on every rank) if another run holds it, it cannot be written, or its checkpoints are of
  // another history.
  Saver(SaveOptions options, Communicator& comm);
  ~Saver();
  Saver(const Saver&) = delete;
  Saver& operator=(const Saver&) = delete;

  // A collective. Publishes the previous save first if it is still pending (waiting for it),
  // copies this rank's state, and starts writing it in the background. `info` is the
  // trainer's part of the manifest (model, optimizer, schedule, data position, config...).
  SaveStarted save(Engine& engine, std::int64_t step, nlohmann::json info);
  // A collective every rank calls at the same points (once per step, and at the end with
  // wait = true). Publishes the pending save once every rank's file is written; `wait` blocks
  // until then. A failed write on any rank throws CheckpointError on every rank.
  std::optional<Published> poll(bool wait);

 private:
  struct Pending;
  Published publish();
  std::vector<std::string> prune();  // warnings for what could not be removed

  bool ours(std::int64_t step) const;  // a checkpoint of this run's history, which --keep may prune
  SaveOptions options_;
  Communicator& comm_;
  std::shared_ptr<DirectoryLock> lock_;  // rank 0's, for the Saver's life
  std::int64_t continues_step_ = -1;     // the resumed step when this run continues the directory's own history
  std::vector<std::int64_t> started_;    // the steps this run started to save
  std::unique_ptr<Pending> pending_;
  // (tensors * shard_numel) f32, host: the file's bytes; reused, and not zero-filled
  // (every element is written by the copy), so a save's stall is the copy alone.
  std::unique_ptr<float[]> snapshot_;
  std::size_t snapshot_size_ = 0;
};

}  // namespace zero::checkpoint
