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
// --zenflow: DeepSpeed's tutorial ZenFlow (topk_ratio 0.05, columns chosen once, the CPU every 4
// steps, overlapped), the zero_optimization.zenflow section.
nlohmann::json bench_zenflow_section();
// --device nvme (bench_offload_nvme.cpp): host offload against the NVMe tier, alternated (with
// --zenflow, ZenFlow on each tier too).
int bench_offload_nvme(const Flags& flags);
// With --device D (not cpu): the link's copy bandwidth on device D first (bench_link.cpp).
void print_link_bandwidth(const std::string& device_name);

}  // namespace zero::cli
