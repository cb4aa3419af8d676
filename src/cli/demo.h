// `zero demo`: trains the same model under stages 0, 1, 2 and 3 on N ranks, with offload, and
// stage 3 with activation checkpointing, and prints, per run, the measured model-state bytes per
// rank beside the paper's formula, the measured traffic per step beside its formula, the
// activations, the step time, the final loss and a SHA-256 of the final weights (identical
// across runs); the same in a figure (svg.h) and as JSON.
#pragma once

#include <string>
#include <vector>

#include "cli/flags.h"

namespace zero::cli {

int demo_main(const std::vector<std::string>& args);
std::vector<FlagSpec> demo_flags();

}  // namespace zero::cli
