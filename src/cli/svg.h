// The demo's picture, drawn as a reader of the ZeRO paper would look for it: per-rank model state
// by category beside the paper's formula for each run, the host tier beside it by category, what
// else the device holds (activations, gathered units, comm buffers: not model state) on the same
// scale below, the bytes sent per step beside 2Ψ and 3Ψ, and the loss curves, drawn once where
// they are the same bits. Plain SVG, written by hand (no plotting library on the machine).
//
// Every number comes from the Figure; the renderer decides only how to draw it (whether the loss
// curves are one line or several is read from the values, never assumed).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace zero::cli {

using Parts = std::vector<std::pair<std::string, double>>;  // (name, bytes), stacked bottom to top

// A formula of the paper and its value for this run: "4Ψ + 4Ψ + 8Ψ/N", 8545280 bytes.
struct Mark {
  std::string text;
  double bytes = 0;
};

struct FigureRun {
  std::string label;         // "2+opt", "3+ckpt"
  Parts state;               // device tier model state after the last step: parameters, gradients, optimizer state
  Mark state_mark;           // the formula for `state`
  Parts host;                // host tier (offloaded state) by category; empty without offload
  Mark host_mark;
  Parts working;             // device tier peaks that are not model state: activations, gathered units, comm buffers
  Parts sent;                // bytes this rank sent in one step, by collective (max over ranks)
  Mark traffic_mark;         // 2Ψ(N-1)/N or 3Ψ(N-1)/N elements of the training type, in bytes
  std::vector<float> losses; // per step
  std::string weights_sha256;
  double step_ms = 0;
  std::string baseline;      // a run's label this one differs from only by activation checkpointing ("" if none)
};

struct Figure {
  std::string title;
  std::vector<std::string> notes;  // lines under the title: model, precision and what the marks count
  std::vector<FigureRun> runs;
};

std::string render_demo_svg(const Figure& figure);

}  // namespace zero::cli
