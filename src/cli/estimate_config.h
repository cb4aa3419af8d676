// The few keys of a DeepSpeed config that `zero estimate --config` needs, read leniently.
//
// Why not config/config.h's load_config: that validates a config for *training* with this build
// (it refuses bf16/fp16, which the planner plans for, and checks the batch against a world
// size); an estimate must read the configs people bring from DeepSpeed as they are. Keys read:
//   zero_optimization.{stage, offload_optimizer.device, offload_param.device, reduce_bucket_size,
//     allgather_bucket_size, stage3_prefetch_bucket_size, stage3_max_live_parameters,
//     stage3_param_persistence_threshold}
//   bf16.enabled, fp16.enabled (either: mixed precision), train_micro_batch_size_per_gpu,
//   gradient_accumulation_steps, and our own "model" section {vocab_size, n_ctx | seq_len,
//   n_embd, n_layer, n_head}.
// Everything else is left alone. A value of "auto" (Hugging Face's Trainer fills those in) counts
// as absent. ConfigError ("[estimate] ...") for a missing or malformed file, a wrong type, or an
// offload device other than "none" and "cpu".
#pragma once

#include <optional>
#include <string>

#include "model/gpt_shape.h"
#include "planner/planner.h"

namespace zero::cli {

struct EstimateConfig {
  std::optional<ZeroSettings> zero;  // present when the file has "zero_optimization"
  std::optional<DtypeMode> dtype;
  std::optional<int> micro_batch;
  std::optional<int> gradient_accumulation_steps;
  std::optional<GptShape> gpt;
  bool lamb = false;  // "optimizer": {"type": "Lamb"}: one more small all-gather per step
};

EstimateConfig read_estimate_config(const std::string& path);

}  // namespace zero::cli
