// libFuzzer harness: the config reader (src/config). The input is a config file's bytes,
// optionally followed by a NUL byte and a `--set` assignment ("a.b.c=value"). The file is read
// (read_config_file: JSON syntax, duplicate keys) and validated (parse_config) for 1, 2 and 3
// ranks; then the assignment is applied (apply_override) and the result validated again. A
// refusal must be a zero::Error (see fuzz_guard.h).
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "fuzz/fuzz_guard.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zero;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string file = input.substr(0, nul);
  const std::string path = fuzz::scratch_file("ds_config.json", file.data(), file.size());
  fuzz::expect_only_zero_errors("config", [&] {
    nlohmann::json j = read_config_file(path);
    for (int world = 1; world <= 3; ++world) {
      fuzz::expect_only_zero_errors("config", [&] { parse_config(j, world); });
    }
    if (nul != std::string::npos) {
      apply_override(j, input.substr(nul + 1));
      parse_config(j, 2);
    }
  });
  return 0;
}
