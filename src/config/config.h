// The training configuration: a DeepSpeed-compatible JSON file, validated into a plain struct.
//
//   TrainConfig c = load_config("ds_config.json", world_size);   // throws ConfigError
//
// A user brings the ds_config.json they already use with DeepSpeed. Every key in it is one of:
//   - read:        parsed into TrainConfig (batch sizes, optimizer, scheduler, zero_optimization ...);
//   - ignored:     accepted and ignored, ONLY where the key has no numerical effect (logging,
//                  monitors, communication-pattern hints); their paths are listed in
//                  TrainConfig::ignored_keys so the CLI can say so. Each is listed, with the
//                  reason, in the rule tables of config.cpp and zero_section.cpp;
//   - unsupported: known (DeepSpeed has it) but not supported yet: an error that says so and what
//                  to do. Some are accepted at their no-op value only (e.g. "prescale_gradients":
//                  false, "zero_quantized_nontrainable_weights": false, "fp16": {"enabled": false}).
// Anything else is an unknown key: inside a section, an error naming its full path
// (zero_optimization.stgae) and the nearest known key at that level; at the top level, an error
// only when it is a typo of a known key (two edits or fewer), else accepted with a warning, as
// DeepSpeed ignores top-level keys it does not read ("_comment"), unless ConfigOptions::strict.
// Nothing with a numerical effect is ever silently dropped. Every problem of a file is reported
// in one ConfigError, each with its key path and what to do.
//
// "auto", the Hugging Face Trainer's placeholder, is accepted at the keys the Trainer fills in,
// and resolved as zero's settings give it (docs/training.md: "auto"); each resolution is in auto_values.
//
// Besides DeepSpeed's keys the file may hold sections of our own: "model", "data",
// "train_steps", "seed", "device", "device_memory", "host_memory" and "comm_timeout_seconds" (DeepSpeed
// has none of these: its model and data come from Python).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/settings.h"
#include "backends/facts.h"
#include "model/gpt_activations.h"
#include "model/gpt_shape.h"
#include "model/llama_shape.h"

namespace zero {

enum class ScheduleType { none, warmup, warmup_decay, warmup_cosine };  // none, WarmupLR, WarmupDecayLR, WarmupCosineLR
enum class WarmupType { log, linear };

// "scheduler": DeepSpeed's learning-rate schedules (deepspeed/runtime/lr_schedules.py), same
// parameter names, same formulas, same step counting.
struct Schedule {
  ScheduleType type = ScheduleType::none;
  WarmupType warmup_type = WarmupType::log;
  std::int64_t warmup_num_steps = 1000;
  std::int64_t total_num_steps = 0;   // WarmupDecayLR, WarmupCosineLR (required there)
  double warmup_min_lr = 0.0;         // WarmupLR, WarmupDecayLR
  // WarmupLR, WarmupDecayLR. Unset: the optimizer's lr (WarmupLR). WarmupDecayLR's own default is
  // 0.001, filled in by the parser, exactly as DeepSpeed does.
  std::optional<double> warmup_max_lr;
  double warmup_min_ratio = 0.0;      // WarmupCosineLR: lr = base_lr * ratio
  double cos_min_ratio = 0.0001;      // WarmupCosineLR

  // The learning rate of optimizer step `step`, counting from 0: `step` is the number of optimizer
  // steps already taken (Engine::steps_done() before the step). DeepSpeed sets the lr when the
  // scheduler is built and calls scheduler.step() after every optimizer step, so optimizer step
  // `step` runs with DeepSpeed's last_batch_iteration = step - 1. Hence the first optimizer step
  // (step 0) uses warmup_min_lr for WarmupLR/WarmupDecayLR and 0 for WarmupCosineLR, and the
  // second (step 1, last_batch_iteration 0) uses gamma = 0 again. base_lr is the optimizer's lr.
  // Computed in double, rounded once to float.
  float lr_at(std::int64_t step, float base_lr) const;
};

// Our own "model" section: {"type": "gpt", "vocab_size", "n_ctx" (or "seq_len"), "n_embd",
// "n_layer", "n_head", "checkpoint_activations"}, or {"type": "llama"} with Hugging Face's
// LlamaConfig names: "vocab_size", "max_position_embeddings" (the context trained at),
// "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads" (default: the
// heads), "num_hidden_layers", "rms_norm_eps", "rope_theta", "tie_word_embeddings", and
// "checkpoint_activations", and "init_from" (either type). The checkpointing's settings come from DeepSpeed's
// "activation_checkpointing" section (cpu_checkpointing).
struct ModelSection {
  std::string type = "gpt";  // "gpt" or "llama"
  GptShape shape;  // type gpt; defaults V=256 T=64 C=128 L=4 H=4
  LlamaShape llama;  // type llama; defaults V=256 T=64 C=128 F=344 L=4 H=4 KV=4, untied
  GptCheckpointing checkpointing;  // enabled: checkpoint_activations (or the CLI's --activation-checkpointing)
  // "init_from": a Hugging Face model directory whose weights start the run (config/init_from.h
  // makes the section the directory's model); empty: counter-based initial weights.
  std::string init_from;

  bool is_llama() const { return type == "llama"; }
  int seq_len() const { return is_llama() ? llama.seq_len : shape.seq_len; }
  int vocab_size() const { return is_llama() ? llama.vocab_size : shape.vocab_size; }
  std::int64_t num_parameters() const { return is_llama() ? llama.num_parameters() : shape.num_parameters(); }
  std::string describe() const { return is_llama() ? "LLaMA " + llama.describe() : "GPT " + shape.describe(); }
};

enum class DataFormat { auto_detect, text, bin };  // "auto": by extension, .bin is llm.c's format

// Our own "data" section: {"path", "val_path", "format", "tokenizer", "val_fraction", "seed"}.
struct DataSection {
  std::string path;                 // empty: the CLI's default text
  std::string val_path;             // a validation set of its own (same format and tokenizer); then
                                    // val_fraction is 0 and all of `path` trains
  std::string tokenizer;            // for text: data::open_tokenizer's spec; empty: bytes
  DataFormat format = DataFormat::auto_detect;
  double val_fraction = 0.05;       // held-out share of the tokens, in [0, 1)
  std::uint64_t seed = 1234;        // unset: the top-level seed
  bool has_validation() const { return val_fraction > 0.0 || !val_path.empty(); }
};

// Ours: "train_checkpoints": {"save", "save_every", "keep", "resume"}, zero train's sharded
// checkpoints (DeepSpeed's own "checkpoint" section is another thing, accepted and ignored). The
// flags --save, --save-every, --keep and --resume override these.
struct CheckpointSection {
  std::string save;             // the save directory; empty: no saves
  std::int64_t save_every = 0;  // 0: only the final save
  int keep = 0;                 // 0: keep all
  std::string resume;           // empty: a fresh run
};

// Ours: "train_eval": {"every", "batches"}, the validation during training (--eval-every and
// --eval-batches override them).
struct EvalSection {
  std::int64_t every = 0;    // also evaluate after every N steps; 0: at the start and the end only
  std::int64_t batches = 0;  // micro-batches per rank per evaluation; 0: the run's default
};

struct TrainConfig {
  // Batch: train_batch_size == micro_batch_size * gradient_accumulation_steps * world_size.
  int train_batch_size = 0;
  int micro_batch_size = 0;             // DeepSpeed's train_micro_batch_size_per_gpu
  int gradient_accumulation_steps = 1;

  // The engine's settings (engine/settings.h), the one description of the run that zero train,
  // zero estimate and the planner's dry run all take: "zero_optimization" (stage, offload,
  // buckets, stage3_*, overlap_comm), "optimizer" ({"type", "params": {lr, betas, eps,
  // weight_decay, ...}}), bf16 / fp16 (precision.compute; fp16's loss scaling: precision.loss_scaler),
  // gradient_clipping, prescale_gradients / gradient_predivide_factor (each rank's gradient is
  // divided by it before the sum: the world size with prescale_gradients, else the factor).
  // DeepSpeed's defaults where the file is silent.
  EngineSettings engine;
  std::string optimizer_type = "AdamW"; // "Adam", "AdamW", "Lamb" or "OneBitAdam" (DeepSpeed's spelling)
  Schedule scheduler;
  int steps_per_print = 10;
  ModelSection model;
  DataSection data;
  CheckpointSection checkpoints;        // ours: "train_checkpoints"
  EvalSection eval;                     // ours: "train_eval"
  std::int64_t train_steps = 200;       // ours: optimizer steps to run (DeepSpeed has no such key)
  std::uint64_t seed = 1234;            // ours: initialisation seed (DeepSpeed has no such key)
  std::string device_memory;            // ours: device tier capacity ("80GiB"); empty: unlimited
  std::string device = default_device();  // ours: where the model computes and the device tier lives: a backend (backends/registry.h)
  std::string host_memory;              // ours: host memory of one node, shared by its ranks; empty: what the machine has
  double comm_timeout_seconds = 300;    // ours: a collective not done after this long fails (CommOptions::timeout)
  // Mixed precision (engine.precision): bf16.enabled or fp16.enabled (at most one). Parameters,
  // gradients and the collectives in that type; f32 master parameters and Adam moments.
  // communication_data_type and data_types.grad_accum_dtype, when given, must name the same type
  // (zero reduces and accumulates in the compute type).
  bool bf16() const { return engine.precision.compute == Dtype::kBf16; }
  bool fp16() const { return engine.precision.compute == Dtype::kF16; }

  // Paths of keys present in the file that were accepted and ignored (no numerical effect), e.g.
  // "wall_clock_breakdown", "zero_optimization.round_robin_gradients", for the CLI to mention.
  std::vector<std::string> ignored_keys;
  // Top-level keys that are not DeepSpeed's (nor typos of them), accepted as DeepSpeed accepts
  // them ("_comment", "cuda_visible_devices"), for the CLI to warn about.
  std::vector<std::string> unknown_keys;
  // Each "auto" resolved, in reading order: "optimizer.params.lr = \"auto\" -> 0.001 (why)".
  std::vector<std::string> auto_values;
};

struct ConfigOptions {
  bool strict = false;  // unknown top-level keys are errors too (zero train --strict-config)
  std::string source;   // the file's name, for messages ("" for a document built in code)
};

// Reads, parses and validates a JSON config file: parse_config(read_config_file(path), ...).
TrainConfig load_config(const std::string& path, int world_size, ConfigOptions options = {});

// The document in a config file, not yet validated (to apply overrides to before parse_config).
// ConfigError for a missing or empty file, a JSON syntax error (with file:line:column), a key
// written twice in one object (nlohmann would silently keep the last; DeepSpeed rejects it too),
// nesting deeper than 64 levels, or a number beyond a double (1e400), naming its key.
nlohmann::json read_config_file(const std::string& path);

// Validates a parsed document. world_size is the number of data-parallel ranks. ConfigError with
// every problem found, numbered when there are several.
TrainConfig parse_config(const nlohmann::json& j, int world_size, const ConfigOptions& options = {});

// The engine's settings alone from a config document, read and validated by the readers
// parse_config runs, for `zero estimate --config`, which plans a DeepSpeed file for a model and
// world size of its own: zero_optimization, optimizer, bf16/fp16, gradient_clipping and
// prescale_gradients / gradient_predivide_factor, every problem reported as parse_config reports
// it. The other keys are only checked to be known and of the right type (the batch, the model and
// the data are not the settings'). "auto" bucket sizes resolve from `hidden` (the model's hidden
// size, as the Hugging Face Trainer fills them in); 0: as if absent.
EngineSettings parse_engine_settings(const nlohmann::json& j, int world_size, std::int64_t hidden, const ConfigOptions& options = {});

// Every key path zero's tables know (top level, zero_optimization and its offload blocks,
// optimizer.params), for the test that compares them with DeepSpeed's schema.
std::vector<std::string> known_config_keys();

// Command-line overrides, applied to the document before parse_config so that they are validated
// exactly like the file: sets j["a"]["b"]["c"] = value for dotted_key "a.b.c", creating objects on
// the way. ConfigError if the path runs through a value that is not an object.
void apply_override(nlohmann::json& j, const std::string& dotted_key, const nlohmann::json& value);

// The same for one "a.b.c=value" assignment: value is read as JSON (2, 2e8, true, [0.9,0.95],
// "x") and, when it is not valid JSON, taken as a plain string (data.path=/tmp/x.txt).
void apply_override(nlohmann::json& j, const std::string& assignment);

}  // namespace zero
