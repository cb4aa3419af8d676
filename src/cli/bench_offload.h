// `zero bench offload`: step time of the GPT with and without ZeRO-Offload, and with and without
// the delayed update, in one run; the CPU optimizer's overlap with compute from the trace; the
// delayed update's validation loss beside the undelayed one.
#pragma once

#include <string>
#include <vector>

namespace zero::cli {

int bench_offload_main(const std::vector<std::string>& args);

}  // namespace zero::cli
