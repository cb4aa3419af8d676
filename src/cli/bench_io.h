// `zero bench io`: the NVMe tier's read and write bandwidth on a folder, beside fio's.
#pragma once

#include <string>
#include <vector>

#include "cli/flags.h"

namespace zero::cli {

int bench_io_main(const std::vector<std::string>& args);
std::vector<FlagSpec> bench_io_flags();

}  // namespace zero::cli
