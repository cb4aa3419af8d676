// `zero train`: trains a GPT on text with a DeepSpeed-style config, under mpirun or launching
// its own MPI job (--ranks N), printing loss, learning rate, gradient norm, throughput, memory
// and traffic as it goes.
#pragma once

#include <string>
#include <vector>

#include "cli/flags.h"

namespace zero::cli {

int train_main(const std::vector<std::string>& args);
std::vector<FlagSpec> train_flags();

}  // namespace zero::cli
