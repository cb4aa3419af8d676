// `zero generate --checkpoint DIR --prompt TEXT ...`: a continuation (KV-cached, one sequence).
// `zero eval --checkpoint DIR --data FILE`: the loss (bits per byte for text) on a file.
#pragma once

#include <string>
#include <vector>

#include "cli/flags.h"

namespace zero::cli {

int generate_main(const std::vector<std::string>& args);
std::vector<FlagSpec> generate_flags();
int eval_main(const std::vector<std::string>& args);
std::vector<FlagSpec> eval_flags();

}  // namespace zero::cli
