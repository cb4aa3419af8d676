// Every command of `zero` and the flags its parser accepts, in one list: the help test
// (tests/cli/help_test.cpp) runs `zero WORDS --help` for each and checks that it exits 0 and names
// every flag, so a command whose --help fails or leaves a flag out cannot go unnoticed.
#pragma once

#include <string>
#include <vector>

namespace zero::cli {

struct CommandFlags {
  std::vector<std::string> words;       // after `zero`: {"bench", "train"}
  std::vector<std::string> flag_names;  // without the dashes, from the command's own table
};

std::vector<CommandFlags> command_flag_tables();

}  // namespace zero::cli
