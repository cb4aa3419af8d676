// The config.json and generation_config.json of a Hugging Face model directory (zero ckpt export
// writes them), for transformers' GPT2LMHeadModel and LlamaForCausalLM: the model's real shape
// under the names GPT2Config and LlamaConfig read, and what zero's model computes where those
// configs offer a choice (GELU's tanh form, LayerNorm's epsilon, no dropout, no biases in a LLaMA).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "model/gpt_shape.h"
#include "model/llama_shape.h"

namespace zero {

// What the directory's config says besides the shape.
struct HfConfigExtras {
  bool bf16 = false;                   // the weights' dtype: torch_dtype "bfloat16", else "float32"
  std::optional<int> bos, eos;         // the tokenizer's, when it has them
};

// The transformers release whose configs these follow: the first whose LlamaConfig reads every
// field written here (head_dim).
inline constexpr const char* kHfTransformersVersion = "4.45.0";

nlohmann::json hf_config(const GptShape& shape, const HfConfigExtras& extras);
nlohmann::json hf_config(const LlamaShape& shape, const HfConfigExtras& extras);
// generation_config.json: the token ids, as save_pretrained writes it for a config that sets no
// generation parameter of its own (_from_model_config).
nlohmann::json hf_generation_config(const HfConfigExtras& extras);

}  // namespace zero
