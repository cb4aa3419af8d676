// Every command's --help exits 0 and names every flag its parser accepts. The flags come from the
// commands' own tables (cli/commands.h), not from a list written here, so a flag added to a table
// is checked at once; the help text is the binary's, run as a user runs it.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "cli/commands.h"

namespace {

struct Ran {
  int exit_code = -1;
  std::string output;
};

Ran run(const std::string& command) {
  Ran r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(Help, EveryCommandsHelpExitsZeroAndNamesEveryFlag) {
  for (const zero::cli::CommandFlags& c : zero::cli::command_flag_tables()) {
    std::string words;
    for (const std::string& w : c.words) words += " " + w;
    const Ran r = run(std::string(ZERO_BINARY) + words + " --help");
    EXPECT_EQ(r.exit_code, 0) << "zero" << words << " --help:\n" << r.output;
    for (const std::string& flag : c.flag_names) {
      // "--name" followed by a space or the end of a word: --ranks must not pass for --ranks-per-node.
      const std::string dashed = "--" + flag;
      bool found = false;
      for (std::size_t at = r.output.find(dashed); at != std::string::npos && !found; at = r.output.find(dashed, at + 1)) {
        const std::size_t end = at + dashed.size();
        found = end == r.output.size() || r.output[end] == ' ' || r.output[end] == '\n' || r.output[end] == '=';
      }
      EXPECT_TRUE(found) << "zero" << words << " --help does not name " << dashed << ":\n" << r.output;
    }
  }
}

TEST(Help, TheTopLevelHelpNamesEveryCommand) {
  const Ran r = run(std::string(ZERO_BINARY) + " --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const zero::cli::CommandFlags& c : zero::cli::command_flag_tables()) {
    const std::string& command = c.words.front();
    EXPECT_NE(r.output.find("\n  " + command + " "), std::string::npos) << "zero --help does not name " << command << ":\n" << r.output;
  }
}

}  // namespace
