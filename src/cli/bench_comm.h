// `zero bench comm`: the all-reduce bandwidth of zero's communicator, per size and determinism
// mode, on whatever link the ranks share (threads, one host's shared memory, TCP between hosts).
#pragma once

#include <string>
#include <vector>

#include "cli/flags.h"

namespace zero::cli {

int bench_comm_main(const std::vector<std::string>& args);
std::vector<FlagSpec> bench_comm_flags();

}  // namespace zero::cli
