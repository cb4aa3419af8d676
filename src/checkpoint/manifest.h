// The checkpoint format (docs/checkpoints.md). A checkpoint is a directory:
//
//   DIR/latest                          the name of the newest complete checkpoint ("step-00000020")
//   DIR/step-00000020/manifest.json     self-describing: model, layout, optimizer, data position, files
//   DIR/step-00000020/rank-00000-of-00002.bin   rank 0's shard: raw little-endian f32
//
// A rank file holds, for every unit in layout order, for every state tensor in manifest order
// (master, exp_avg, exp_avg_sq, and params_in_use when a delayed update was in flight), the rank's slice of that unit: `slice` elements, the unit's
// padding included (zeros). So unit u's tensor t starts at byte
//   4 * (tensors * shard_offset(u) + t * slice(u))
// of each rank file, where shard_offset(u) is the sum of the slices of the units before u.
// Element e of unit u (unpadded order) is in the file of rank e / slice(u), at element
// e % slice(u) of that tensor's slice. Each file's CRC-32 is kept per block of block_bytes, so a
// reader that reads only some byte ranges verifies exactly the blocks it reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_error.h"
#include "partition/layout.h"

namespace zero {
struct EngineCounters;
}

namespace zero::checkpoint {

inline constexpr int kFormatVersion = 1;
inline constexpr const char* kFormatName = "zero-checkpoint";
inline constexpr std::uint64_t kDefaultBlockBytes = 1 << 20;

// One unit as the checkpoint's writer laid it out.
struct UnitRecord {
  std::string name;
  std::size_t numel = 0, padded = 0, slice = 0, shard_offset = 0;
};

// One rank's file, as written.
struct FileRecord {
  std::string name;
  std::uint64_t bytes = 0;
  std::uint32_t crc32 = 0;                  // of the whole file
  std::vector<std::uint32_t> block_crc32;   // of each block_bytes block (the last may be shorter)
};

struct Manifest {
  int version = kFormatVersion;
  std::int64_t step = 0;            // optimizer steps taken
  int world_size = 1;
  std::string layout_fingerprint;   // FlatLayout::fingerprint, hex
  std::vector<UnitRecord> units;
  std::vector<std::string> tensors; // per element of a rank file: master, exp_avg, exp_avg_sq[, params_in_use]
  std::uint64_t block_bytes = kDefaultBlockBytes;
  std::vector<FileRecord> files;    // (world_size) by rank
  // The engine's counters besides the step: fp16's skipped steps and loss scaler; whether the
  // delayed update was in flight (then `tensors` ends with params_in_use).
  std::int64_t skipped_steps = 0;
  nlohmann::json loss_scaler;       // {scale, hysteresis_left, iter, last_overflow_iter}, or null
  // A ZenFlow run's: {summed, in_flight, options: the zenflow section}, or null (then `tensors`
  // are zenflow_tensor_names()).
  nlohmann::json zenflow;
  nlohmann::json parameters;        // [{name, shape, dtype, unit, offset, unit_offset}]
  nlohmann::json info;              // the trainer's: model, stage, optimizer, schedule, data, seed, config, loss

  // Elements of unit u's tensor t start at this byte of every rank file.
  std::uint64_t tensor_byte(int u, int t) const;
  std::uint64_t rank_file_bytes() const;
};

inline constexpr const char* kParamsInUseName = "params_in_use";
// A ZenFlow checkpoint's tensors, in StateTensor order.
std::vector<std::string> zenflow_tensor_names();

// The engine's counters as the manifest records them, and back.
void record_counters(Manifest& m, const EngineCounters& c);
EngineCounters counters_of(const Manifest& m);

// The layout's part of a manifest (units, parameters, fingerprint, world size, tensors).
Manifest describe_layout(const FlatLayout& layout);

std::string step_dir_name(std::int64_t step);           // "step-00000020"
std::string rank_file_name(int rank, int world_size);   // "rank-00000-of-00002.bin"

nlohmann::json to_json(const Manifest& m);
// Throws CheckpointError naming `path` for a document that is not a zero checkpoint manifest,
// another format version, or missing or malformed fields.
Manifest from_json(const nlohmann::json& j, const std::string& path);
Manifest read_manifest(const std::string& path);

}  // namespace zero::checkpoint
