// `zero estimate`: which ZeRO stage, and will it fit? Plans stages 0-3 with and without offload
// for a model on N ranks, prints one table of per-rank memory (device and host, by category) and
// per-step traffic, marks what fits --device-memory and --host-memory, and recommends a
// configuration with a line of reason for each one weighed. --json FILE writes the same as JSON.
#pragma once

#include <string>
#include <vector>

#include "cli/flags.h"

namespace zero::cli {

int estimate_main(const std::vector<std::string>& args);
std::vector<FlagSpec> estimate_flags();

}  // namespace zero::cli
