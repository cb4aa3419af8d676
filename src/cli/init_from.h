// --init-from DIR on the command line (zero train, zero eval, zero ckpt import): the model and the
// tokenizer a Hugging Face model directory brings.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/flags.h"

namespace zero::cli {

// The tokenizer spec a run from DIR uses: `given` (a --tokenizer or data.tokenizer; "" when none)
// if DIR holds no tokenizer or holds the same files (by SHA-256); DIR when none is given and it
// holds one; else ConfigError naming both. `given_source` names where `given` came from.
std::string init_from_tokenizer(const std::string& dir, const std::string& given, const std::string& given_source);

// zero train: when the document (after the flags and --set) names model.init_from, its model
// section becomes the directory's (config/init_from.h; `file_model` is the config file's own
// model section, null without --config) and data.tokenizer the directory's tokenizer, unless the
// data is a .bin by data.format.
void apply_init_from_flags(nlohmann::json& j, const nlohmann::json& file_model, const Flags& flags);

}  // namespace zero::cli
