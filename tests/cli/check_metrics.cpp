// check_metrics FILE STEPS RANKS: exits 0 if FILE holds STEPS lines, each a JSON object for step
// 1, 2, ... with the printed fields and one entry per rank (memory by tier and category, bytes
// sent by collective), else prints why and exits 1.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

int fail(const std::string& why) {
  std::printf("FAIL: %s\n", why.c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 4) return fail("usage: check_metrics FILE STEPS RANKS");
  std::ifstream in(argv[1]);
  if (!in) return fail(std::string("cannot open ") + argv[1]);
  const int steps = std::stoi(argv[2]), ranks = std::stoi(argv[3]);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      return fail("line " + std::to_string(n) + " is not JSON: " + e.what());
    }
    for (const char* key : {"step", "loss", "lr", "grad_norm", "step_seconds", "tokens_per_second", "batch_digest", "ranks"})
      if (!j.contains(key)) return fail("line " + std::to_string(n) + " lacks '" + key + "'");
    if (j["step"] != n) return fail("line " + std::to_string(n) + " is step " + j["step"].dump());
    if (j["ranks"].size() != static_cast<std::size_t>(ranks)) return fail("line " + std::to_string(n) + " has " + std::to_string(j["ranks"].size()) + " ranks");
    for (const auto& r : j["ranks"]) {
      if (!r["memory_bytes"]["device"]["current"].contains("parameters")) return fail("a rank lacks device memory by category");
      if (!r["sent_bytes"].contains("all_gather")) return fail("a rank lacks bytes sent by collective");
      if (!(r["memory_bytes"]["device"]["total_peak"].get<std::uint64_t>() > 0)) return fail("a rank's device peak is 0");
    }
  }
  if (n != steps) return fail("found " + std::to_string(n) + " lines, expected " + std::to_string(steps));
  std::printf("ok: %d steps of %d ranks\n", n, ranks);
  return 0;
}
