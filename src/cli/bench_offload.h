// `zero bench offload`: step time of the GPT with and without ZeRO-Offload, and with and without
// the delayed update, in one run; the CPU optimizer's overlap with compute from the trace; the
// delayed update's validation loss beside the undelayed one.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/flags.h"

namespace zero::cli {

int bench_offload_main(const std::vector<std::string>& args);
std::vector<FlagSpec> bench_offload_flags();
// The GPT and its training of --micro-batch, --stage, --steps, --n-embd, --n-layer: a config.
nlohmann::json bench_offload_config(const Flags& flags);
// --device nvme (bench_offload_nvme.cpp): host offload against the NVMe tier, alternated.
int bench_offload_nvme(const Flags& flags);
// With --device D (not cpu): the link's copy bandwidth on device D first (bench_link.cpp).
void print_link_bandwidth(const std::string& device_name);

}  // namespace zero::cli
