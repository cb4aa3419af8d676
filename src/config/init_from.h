// --init-from (model.init_from): the model section a Hugging Face directory's config.json gives.
// The run's model is the directory's; a model key the user gave (in the config file or with
// --set) must agree with config.json, else an error names both values and both sources.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/hf_config_reader.h"

namespace zero {

// The directory's model as zero's "model" section ({"type": "gpt", "n_embd", ...} or
// {"type": "llama", ...} with LlamaConfig's names).
nlohmann::json hf_model_section(const HfModelConfig& hf);

// Reads DIR/config.json and makes j["model"] its model, keeping checkpoint_activations and
// setting init_from = dir. `source_of(key)` says where j's model.<key> came from ("--config
// run.json", "--set model.n_embd=64"), or "" for a value the user did not give (the built-in
// default model), which is replaced without a check. ConfigError for a given key that disagrees
// with config.json (naming both values and both sources), or for one config.json has no
// counterpart of. Returns the directory's config.
HfModelConfig apply_init_from(nlohmann::json& j, const std::string& dir, const std::function<std::string(const std::string&)>& source_of);

}  // namespace zero
