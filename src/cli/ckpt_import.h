// `zero ckpt import DIR --out SAVE`: a Hugging Face model directory as a zero checkpoint at step 0.
#pragma once

#include <string>
#include <vector>

#include "cli/flags.h"

namespace zero::cli {

int ckpt_import_main(std::vector<std::string> args);
std::vector<FlagSpec> ckpt_import_flags();

}  // namespace zero::cli
