// The files of a checkpoint on disk: written crash-safe (a temporary name, fsync, rename, the
// directory fsynced) and read back by byte range, each block's CRC-32 verified as it is read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/manifest.h"
#include "common/input_file.h"

namespace zero::checkpoint {

// Test hook: ZERO_CHECKPOINT_TEST_KILL="POINT:STEP" raises SIGKILL at POINT of the save of step
// STEP: "rank-file" (halfway through rank 0's file) or "before-latest" (the manifest written,
// `latest` not yet). Does nothing when the variable is unset.
void maybe_kill(const char* point, std::int64_t step);

// fsync of a directory, so that a rename inside it survives a crash.
void sync_directory(const std::string& dir);

// Writes `bytes` to `path` through `path.partial`, fsync and rename: a reader sees the old file
// or the whole new one, never part of it.
void write_file_durably(const std::string& path, const std::string& bytes);

// A rank file written in order; its CRC-32s computed on the way.
class ShardWriter {
 public:
  ShardWriter(std::string path, std::uint64_t block_bytes);
  ~ShardWriter();  // an unfinished file is removed
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  void append(const void* data, std::size_t bytes);
  // fsync, rename to the final name, fsync the directory; the record of what was written.
  FileRecord finish();

 private:
  void write_all(const unsigned char* p, std::size_t n);

  std::string path_, partial_;
  std::uint64_t block_bytes_;
  int fd_ = -1;
  FileRecord record_;
  std::uint32_t block_crc_ = 0;
  std::uint64_t in_block_ = 0;
};

// A rank file read by byte range. Opening checks, through the one input reader, that it is a
// regular file (a FIFO would hang, a directory is no rank file) and its size against the
// manifest (missing, truncated, longer); every block a read touches is read whole once and its
// CRC-32 checked.
class ShardReader {
 public:
  ShardReader(std::string path, const FileRecord& record, std::uint64_t block_bytes);
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  void read(std::uint64_t offset, std::size_t bytes, void* out);
  std::uint64_t bytes_read() const { return bytes_read_; }  // from disk, whole blocks

 private:
  void load_block(std::uint64_t block);

  std::string path_;
  FileRecord record_;
  std::uint64_t block_bytes_;
  InputFd fd_;
  std::vector<unsigned char> block_;  // the block last read
  std::uint64_t block_index_ = ~0ULL;
  std::uint64_t bytes_read_ = 0;
};

}  // namespace zero::checkpoint
