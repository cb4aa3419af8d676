// `zero ckpt inspect DIR`: a checkpoint's manifest in human terms, every checksum verified.
// `zero ckpt export DIR --out OUTDIR|FILE.safetensors`: a Hugging Face directory, or the weights alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/flags.h"

namespace zero::cli {

int ckpt_main(const std::vector<std::string>& args);
std::vector<FlagSpec> ckpt_inspect_flags();
std::vector<FlagSpec> ckpt_export_flags();
int ckpt_export_main(std::vector<std::string> args);

// For the verbs: DIR taken out of the words (first, or --checkpoint DIR); ConfigError naming
// `command` when there is none (unless --help).
std::string checkpoint_arg(std::vector<std::string>& args, const std::string& command);
// Peak resident memory of this process so far.
std::uint64_t peak_rss_bytes();

}  // namespace zero::cli
