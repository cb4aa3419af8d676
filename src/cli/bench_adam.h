// `zero bench adam`: the CPU Adam kernel's speed against the memory ceiling, measured in one run.
#pragma once

#include <string>
#include <vector>

namespace zero {

// argv holds only the flags (no program name, no "bench adam"); --help lists them.
// Returns 0 on success, 1 on a failure, 2 on bad flags.
int bench_adam_main(int argc, char** argv);
// The flags its parser accepts, without the dashes.
std::vector<std::string> bench_adam_flag_names();

}  // namespace zero
