// The demo's picture: per-rank memory by category, one stacked bar per run (stage), beside the
// loss curves. Plain SVG, written by hand (no plotting library on the machine), readable in any
// browser.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace zero::cli {

struct MemoryBar {
  std::string label;                                   // "2+opt"
  std::vector<std::pair<std::string, double>> parts;   // device tier: (category, bytes), stacked bottom to top
  double host_bytes = 0;                               // host tier (offloaded state), drawn beside it
};

struct LossCurve {
  std::string label;
  std::vector<float> values;  // per step
};

std::string render_memory_and_loss_svg(const std::string& title, const std::vector<MemoryBar>& bars,
                                       const std::vector<LossCurve>& curves);

}  // namespace zero::cli
