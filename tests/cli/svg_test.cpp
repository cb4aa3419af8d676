// The demo figure's renderer on figures made here: what it draws follows the numbers it is given
// (one loss line only when the curves are the same bits; marks and bytes as given).
#include <gtest/gtest.h>

#include <string>

#include "cli/svg.h"

namespace zero::cli {
namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

FigureRun run(const std::string& label, std::vector<float> losses, double state_bytes, double activations) {
  FigureRun r;
  r.label = label;
  r.state = {{"parameters", state_bytes / 4}, {"gradients", state_bytes / 4}, {"optimizer state", state_bytes / 2}};
  r.state_mark = {"4\u03a8+4\u03a8+8\u03a8", state_bytes};
  r.working = {{"activations (peak)", activations}};
  r.sent = {{"all-reduce", 3000}};
  r.traffic_mark = {"2\u03a8(N\u22121)/N \u00d7 4 B", 3000};
  r.losses = std::move(losses);
  r.weights_sha256 = "ab";
  r.step_ms = 10;
  return r;
}

TEST(DemoSvg, IdenticalLossesAreOneLineAndSaySo) {
  Figure f{"t", {"n"}, {run("0", {3, 2, 1}, 1 << 20, 1 << 19), run("1", {3, 2, 1}, 1 << 19, 1 << 19)}};
  const std::string svg = render_demo_svg(f);
  EXPECT_EQ(count(svg, "<polyline class='loss'"), 1u);
  EXPECT_NE(svg.find("same bits at every step"), std::string::npos);
  EXPECT_EQ(svg.find("DIFFER"), std::string::npos);
}

TEST(DemoSvg, DifferentLossesAreDrawnApartAndFlagged) {
  Figure f{"t", {}, {run("0", {3, 2, 1}, 1 << 20, 1 << 19), run("1", {3, 2, 1.5f}, 1 << 19, 1 << 19),
                     run("2", {3, 2, 1}, 1 << 19, 1 << 19)}};
  f.runs[2].weights_sha256 = "cd";
  const std::string svg = render_demo_svg(f);
  EXPECT_EQ(count(svg, "<polyline class='loss'"), 2u);  // runs 0 and 2 share a curve
  EXPECT_NE(svg.find("The losses DIFFER: 2 distinct curves among 3 runs"), std::string::npos);
  EXPECT_NE(svg.find("The final weights DIFFER"), std::string::npos);
  EXPECT_EQ(svg.find("same bits at every step"), std::string::npos);
}

TEST(DemoSvg, MarksAndBytesAreTheGivenOnes) {
  Figure f{"t", {}, {run("0", {1}, 1234567, 1000), run("3+ckpt", {1}, 7654321, 500)}};
  f.runs[1].baseline = "0";
  const std::string svg = render_demo_svg(f);
  EXPECT_EQ(count(svg, "class='state-group'"), 2u);
  EXPECT_EQ(count(svg, "class='traffic-group'"), 2u);
  EXPECT_NE(svg.find("data-state-formula-bytes='1234567'"), std::string::npos);
  EXPECT_NE(svg.find("data-state-formula-bytes='7654321'"), std::string::npos);
  EXPECT_NE(svg.find(">4\u03a8+4\u03a8+8\u03a8</text>"), std::string::npos);
  // The checkpointed run against its baseline: 1000 B -> 500 B of activations, -50%.
  EXPECT_NE(svg.find("activations 1000 B \u2192 500 B per rank (-50%)"), std::string::npos);
}

}  // namespace
}  // namespace zero::cli
