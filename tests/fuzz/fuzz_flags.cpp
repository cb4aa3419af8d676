// libFuzzer harness: the command-line parsers (src/cli/flags.cpp, src/planner/byte_size.cpp).
// The input is an argument vector, words separated by NUL bytes, parsed against a flag table
// like zero train's (value flags, a switch, a repeated --set); every value then goes through the
// parser its flag would use: get_int, parse_byte_size (--device-memory), parse_bandwidth
// (--link-bandwidth) and apply_override (--set). A refusal must be a zero::Error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/flags.h"
#include "config/config.h"
#include "fuzz/fuzz_guard.h"
#include "planner/byte_size.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zero;
  std::vector<std::string> args;
  std::string word;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(word);
      word.clear();
    } else {
      word.push_back(static_cast<char>(data[i]));
    }
  }
  args.push_back(word);
  for (const std::string& a : args) {  // each word alone, as the value of a size or bandwidth flag
    fuzz::expect_only_zero_errors("parse_byte_size", [&] { parse_byte_size(a, "--device-memory"); });
    fuzz::expect_only_zero_errors("parse_bandwidth", [&] { parse_bandwidth(a, "--link-bandwidth"); });
  }
  fuzz::expect_only_zero_errors("flags", [&] {
    const cli::Flags flags("zero train",
                           {{"steps", "", true, "200"},
                            {"device-memory", "", true, ""},
                            {"link-bandwidth", "", true, "25GB/s"},
                            {"set", "", true, ""},
                            {"verbose", "", false, ""}},
                           args);
    fuzz::expect_only_zero_errors("--steps", [&] { flags.get_int("steps", 1, 1'000'000'000); });
    if (flags.has("device-memory")) {
      fuzz::expect_only_zero_errors("--device-memory", [&] { parse_byte_size(flags.get("device-memory"), "--device-memory"); });
    }
    fuzz::expect_only_zero_errors("--link-bandwidth", [&] { parse_bandwidth(flags.get("link-bandwidth"), "--link-bandwidth"); });
    nlohmann::json j = nlohmann::json::object();
    for (const std::string& s : flags.get_all("set")) {
      fuzz::expect_only_zero_errors("--set", [&] { apply_override(j, s); });
    }
    flags.usage();
  });
  return 0;
}
