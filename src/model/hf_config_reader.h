// A Hugging Face model directory's config.json, read as the shape of a model zero trains (the
// inverse of model/hf_config.h, which writes it): GPT-2 (model_type "gpt2", transformers'
// GPT2Config) or LLaMA (model_type "llama", LlamaConfig). A key the file leaves out has the
// config class's default, as transformers reads it (save_pretrained writes only the keys that
// differ from the defaults). What zero's models do not have is refused by name: another
// activation, rope_scaling, attention or MLP biases, a head size of its own, untied GPT-2
// embeddings, another layer-norm epsilon.
#pragma once

#include <string>
#include <vector>

#include "model/gpt_shape.h"
#include "model/llama_shape.h"

namespace zero {

struct HfModelConfig {
  std::string path;        // DIR/config.json
  std::string model_type;  // "gpt2" or "llama"
  GptShape gpt;            // model_type gpt2: seq_len is n_positions
  LlamaShape llama;        // model_type llama
  // Keys read and not applied, each with why ("resid_pdrop 0.1: zero trains without dropout").
  std::vector<std::string> notes;

  bool is_llama() const { return model_type == "llama"; }
};

// ConfigError naming the file and the key: no config.json, not JSON, an architecture zero does
// not train (saying which it does), a feature zero's model lacks, or a shape the model refuses.
HfModelConfig read_hf_config(const std::string& dir);

}  // namespace zero
