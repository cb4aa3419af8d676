// The training loop's checkpoints: what the trainer records in a manifest beside the shards
// (model, optimizer, schedule, data position, seed, config), resuming, and periodic saves.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/saver.h"
#include "comm/communicator.h"
#include "config/config.h"
#include "data/tokenizer.h"
#include "engine/engine.h"

namespace zero {

struct CheckpointOptions {
  std::string save_dir;         // empty: no saves
  std::int64_t save_every = 0;  // save after every N optimizer steps; 0: only at the end
  int keep = 0;                 // keep the newest K checkpoints; 0: all
  std::string resume;           // a save directory or a checkpoint directory; empty: a fresh run
  std::string config_json;      // the effective config document, recorded in the manifest
  std::string data_path;        // the file trained on (resolved), recorded in the manifest
  nlohmann::json tokenizer;     // tokenizer_record() of the run's tokenizer (null: bytes), in the manifest's data
};

// What a checkpoint records of a tokenizer: {"spec", "description", "files": [{"path", "sha256"}]}.
nlohmann::json tokenizer_record(const std::string& spec, const data::Tokenizer& tokenizer);
// CheckpointError unless `now` (a tokenizer_record) has the files, by SHA-256, of `then` (the
// manifest at `path` records it; null: bytes), naming both and saying `what_to_do`.
void check_same_tokenizer(const nlohmann::json& then, const nlohmann::json& now, const std::string& path, const std::string& what_to_do);

// The checkpoint flags a command line gave (unset: not given).
struct CheckpointFlags {
  std::optional<std::string> save, resume;
  std::optional<std::int64_t> save_every;
  std::optional<int> keep;
};

// The config's train_checkpoints section with the flags over it, into `out` (its other fields
// are kept); each flag that replaces a value the file gave is added to `overrides`
// ("--save-every 2 overrides train_checkpoints.save_every = 1"). ConfigError for save_every or
// keep without a save directory (they would silently do nothing).
void apply_checkpoint_settings(const CheckpointSection& file, const CheckpointFlags& flags, CheckpointOptions& out,
                               std::vector<std::string>& overrides);

// The model's description in a manifest ({"type": "gpt", "vocab_size", ...}, or {"type": "llama"}
// with LlamaConfig's names) and back. A description without a type is a GPT's (older manifests).
// CheckpointError naming `where` for a damaged description; model_from_json also for a LLaMA.
nlohmann::json model_json(const GptShape& shape);
nlohmann::json model_json(const LlamaShape& shape);
nlohmann::json model_json(const ModelSection& model);
ModelSection model_section_from_json(const nlohmann::json& model, const std::string& where);
GptShape model_from_json(const nlohmann::json& model, const std::string& where);

// --resume's manifest (in `dir`, a checkpoint directory), checked against this run's model:
// CheckpointError naming the file if it cannot be read or holds another model (type or shape).
// zero::CheckpointError for a checkpoint of another model shape, or trained with another tokenizer
// (`tokenizer`: this run's tokenizer_record; files compared by SHA-256), naming both.
checkpoint::Manifest read_resume_manifest(const std::string& dir, const TrainConfig& config, const nlohmann::json& tokenizer);
// ConfigError when a run resumed at checkpoint_step has no step left to train.
void check_steps_after_resume(std::int64_t checkpoint_step, std::int64_t train_steps);
// What every rank checks at start-up, checked once in the launching process before any rank
// starts: --resume names a readable checkpoint of this model; --save can be written (and, in a
// fresh run, holds no checkpoints yet); a ZenFlow checkpoint fits a run on `world_size` ranks
// (checkpoint::check_zenflow_fits). CheckpointError naming what is wrong.
void check_checkpoint_options(const CheckpointOptions& o, const TrainConfig& config, int world_size);

class TrainCheckpoints {
 public:
  // Checks --save at start-up (every rank; before any step) and finds --resume's checkpoint.
  TrainCheckpoints(const CheckpointOptions& options, const TrainConfig& config, Communicator& comm,
                   std::function<void(const std::string&)> note);
  ~TrainCheckpoints();

  // Loads --resume's checkpoint into the engine; the step to continue from (0 without --resume).
  // Differences from the checkpoint's run that do not change the model are printed.
  std::int64_t resume(Engine& engine, std::int64_t data_tokens);
  // The validation windows the run evaluates (recorded, so that zero eval can repeat them).
  void set_validation_windows(int windows) { val_windows_ = windows; }
  // After optimizer step `step` (1-based) with mean loss `loss`: saves when due, and publishes
  // finished saves. `last`: the run's final step (always saved; waits for the write).
  void after_step(Engine& engine, std::int64_t step, float loss, std::int64_t data_tokens, bool last);
  // Whether after_step(step, last) writes a checkpoint.
  bool due(std::int64_t step, bool last) const;

 private:
  nlohmann::json info(const Engine& engine, std::int64_t step, float loss, std::int64_t data_tokens) const;
  void publish(bool wait);

  CheckpointOptions options_;
  const TrainConfig& config_;
  Communicator& comm_;
  std::function<void(const std::string&)> note_;  // rank 0's messages
  std::unique_ptr<checkpoint::Saver> saver_;
  std::string resume_dir_;
  std::int64_t last_saved_ = -1;
  int val_windows_ = 0;
};

}  // namespace zero
