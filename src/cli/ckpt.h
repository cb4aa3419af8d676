// `zero ckpt inspect DIR`: a checkpoint's manifest in human terms, every checksum verified.
// `zero ckpt export DIR --out FILE [--dtype fp32|bf16]`: one safetensors file, GPT-2 names.
#pragma once

#include <string>
#include <vector>

namespace zero::cli {

int ckpt_main(const std::vector<std::string>& args);

}  // namespace zero::cli
