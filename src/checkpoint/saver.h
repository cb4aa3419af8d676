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

#include "checkpoint/manifest.h"
#include "comm/communicator.h"
#include "engine/engine.h"

namespace zero::checkpoint {

struct SaveOptions {
  std::string dir;          // the save directory: step-* checkpoints and `latest`
  int keep = 0;             // keep the newest K complete checkpoints; 0: all
  bool resuming = false;    // a fresh run refuses a directory that already holds checkpoints
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
};

// Can rank `rank` save into `dir` (created if missing)? "" if so, else why not; a fresh run
// (!resuming) may not use a directory that already holds checkpoints. Saver runs it on every
// rank; the launching process runs it before mpirun.
std::string check_save_directory(const std::string& dir, int rank, bool resuming);

class Saver {
 public:
  // Checks at start-up that `dir` can be written (creating it), on every rank: CheckpointError
  // (on every rank) if not, or if a fresh run would overwrite checkpoints there.
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
  void prune();

  SaveOptions options_;
  Communicator& comm_;
  std::unique_ptr<Pending> pending_;
  // (tensors * shard_numel) f32, host: the file's bytes; reused, and not zero-filled
  // (every element is written by the copy), so a save's stall is the copy alone.
  std::unique_ptr<float[]> snapshot_;
  std::size_t snapshot_size_ = 0;
};

}  // namespace zero::checkpoint
