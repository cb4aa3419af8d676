// What `zero estimate --config` takes from a DeepSpeed config.
//
// The engine's settings (stage, offload, buckets, stage 3's schedule, precision, clipping,
// scaling, optimizer) are read by config/'s own readers, exactly as zero train reads them
// (parse_engine_settings), once the planned model's hidden size and the world size are known:
// what is planned is what the trainer would run. The batch is not checked against a world size
// (an estimate plans other rank counts too): only train_micro_batch_size_per_gpu and
// gradient_accumulation_steps are read here, with our own "model" section {vocab_size, n_ctx |
// seq_len, n_embd, n_layer, n_head}, or {"type": "llama"} with Hugging Face's LlamaConfig names
// (config/config.h); "auto" counts as absent for those. ConfigError
// ("[estimate] ...") for a missing or malformed file or a wrong type of those keys.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/settings.h"
#include "model/gpt_shape.h"
#include "model/llama_shape.h"

namespace zero::cli {

struct EstimateConfig {
  std::string path;
  nlohmann::json document;  // the whole file, for engine_settings
  bool has_zero = false;    // the file has "zero_optimization": its row is "(your config)"
  std::optional<int> micro_batch;
  std::optional<int> gradient_accumulation_steps;
  std::optional<GptShape> gpt;
  std::optional<LlamaShape> llama;  // model.type "llama"
};

EstimateConfig read_estimate_config(const std::string& path);

// The file's engine settings for `ranks` ranks, "auto" bucket sizes from `hidden` (0: unknown,
// as if absent); DeepSpeed's defaults without a file. ConfigError ("[config] <path>: ...") with
// every problem, as zero train reports them.
EngineSettings engine_settings(const EstimateConfig& config, int ranks, std::int64_t hidden);

}  // namespace zero::cli
