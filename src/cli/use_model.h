// `zero generate --checkpoint DIR --prompt TEXT ...`: a continuation (KV-cached, one sequence).
// `zero eval --checkpoint DIR --data FILE`: the loss (bits per byte for text) on a file.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/manifest.h"
#include "cli/flags.h"
#include "data/tokenizer.h"

namespace zero::cli {

int generate_main(const std::vector<std::string>& args);
std::vector<FlagSpec> generate_flags();
int eval_main(const std::vector<std::string>& args);
std::vector<FlagSpec> eval_flags();

// The tokenizer a checkpoint was trained with, as its manifest records it (bytes if none), found
// where it was at training or at `moved_to` (--tokenizer). Its files must have the SHA-256 the
// manifest records (else text would silently become other tokens), and its vocabulary must fit
// the model's: CheckpointError or ConfigError naming the files and saying to give --tokenizer.
std::unique_ptr<data::Tokenizer> open_checkpoint_tokenizer(const checkpoint::Manifest& manifest, const std::string& manifest_path,
                                                           const std::optional<std::string>& moved_to, int model_vocab);
// --tokenizer's help, for the commands that read a checkpoint's tokenizer.
extern const char* const kTokenizerHelp;

}  // namespace zero::cli
