// Resuming: find a checkpoint, check it fits the model, and load this rank's state into the
// engine at any world size and stage. Each rank reads only the byte ranges of the old rank files
// that overlap the state it holds now (whole CRC blocks around them), never the whole model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/directory.h"
#include "checkpoint/manifest.h"
#include "comm/communicator.h"
#include "engine/engine.h"

namespace zero::checkpoint {

// Throws CheckpointError naming `manifest_path` when the checkpoint holds another model than
// `layout` describes (the first differing unit or parameter).
void check_same_model(const Manifest& m, const FlatLayout& layout, const std::string& manifest_path);

// ZenFlow's options as a checkpoint records them (manifest: zenflow.options).
nlohmann::json zenflow_options_json(const ZenflowOptions& z);
// Throws CheckpointError naming `manifest_path` when a ZenFlow checkpoint cannot continue in a run
// of `settings` on `world_size` ranks: its state is each rank's own (the columns a rank selects are
// of the rows it holds), so it loads only into ZenFlow with the same options, ranks and stage. A
// checkpoint of any other placement loads into ZenFlow as a fresh ZenFlow start.
void check_zenflow_fits(const Manifest& m, const EngineSettings& settings, int world_size, const std::string& manifest_path);

struct LoadStats {
  std::uint64_t bytes_read = 0;  // by this rank, from disk
  double seconds = 0;
  // The checkpoint's run had a delayed update in flight, which this engine does not hold (no
  // delayed update, or a longer warm-up): it was applied now, so the next forward computes
  // with the saved masters rather than the step before's parameters.
  bool applied_pending_update = false;
};

// Loads the checkpoint in `dir` (manifest `m`) into the engine: every held element's master and
// moments, then the parameters made from them, and the step count. A collective: if any rank
// fails (a missing, truncated or corrupt file), every rank throws that rank's error.
LoadStats load_checkpoint(Engine& engine, const std::string& dir, const Manifest& m, Communicator& comm);

// Every rank's string, by rank (a collective: lengths, then the strings padded to the longest).
std::vector<std::string> gather_strings(Communicator& comm, const std::string& mine);

// Every rank calls it with its error ("" if none); if any has one, every rank throws
// CheckpointError with the message of the lowest such rank.
void agree_on_errors(Communicator& comm, const std::string& my_error);

}  // namespace zero::checkpoint
