// `zero data prepare FILE... --out DIR`: text files tokenized into llm.c .bin shards (data/prepare.h).
#pragma once

#include <string>
#include <vector>

#include "cli/flags.h"

namespace zero::cli {

int data_main(const std::vector<std::string>& args);
std::vector<FlagSpec> data_prepare_flags();

}  // namespace zero::cli
