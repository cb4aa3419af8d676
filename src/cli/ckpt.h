// `zero ckpt inspect DIR`: a checkpoint's manifest in human terms, every checksum verified.
// `zero ckpt export DIR --out FILE [--dtype fp32|bf16]`: one safetensors file, GPT-2 names.
#pragma once

#include <string>
#include <vector>

#include "cli/flags.h"

namespace zero::cli {

int ckpt_main(const std::vector<std::string>& args);
std::vector<FlagSpec> ckpt_inspect_flags();
std::vector<FlagSpec> ckpt_export_flags();

}  // namespace zero::cli
