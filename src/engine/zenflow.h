// Internal to the engine: ZenFlow's rules (DeepSpeed's runtime/zenflow/), apart from the
// optimizer that applies them (optimizer_zenflow.cpp), so that they are tested alone.
//
// Steps are counted from 0 (t). With W = full_warm_up_rounds, U = update_interval and
// S = select_interval (0: select once), as DeepSpeed's is_zenflow_select_boundary and
// is_zenflow_update_boundary say:
//   warm-up     t < W: the CPU updates every element every step (plain offload);
//   selection   t >= W and (t == W or (S > 0 and t % S == 0)): each 2-D weight's columns are
//               ranked by the L1 norm of their gradient at that step (over the whole rows the
//               rank holds: whole_rows), the top k kept, and the
//               device's moments of the selected columns start again from zero (the device's
//               step count goes on);
//   device      t >= W: Adam on the selected columns and on every 1-D parameter, with this
//               step's gradient, at device step t - W + 1;
//   CPU update  t >= W and ((t + 1 - W) % U == 0 or (S > 0 and (t + 1) % S == 0)): the CPU's
//               Adam over every element with the mean of the gradients accumulated since the
//               last update, at step t + 1; its result reaches the columns not selected (the
//               device's stay), at once, or with overlap_step at the next CPU update.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "zero/settings.h"

namespace zero::zenflow {

bool in_warm_up(const ZenflowOptions& z, std::int64_t t);
bool is_selection_step(const ZenflowOptions& z, std::int64_t t);
bool is_update_step(const ZenflowOptions& z, std::int64_t t);

// Columns selected of a matrix with `cols` columns: DeepSpeed's int(topk_ratio * cols).
std::size_t columns_to_select(const ZenflowOptions& z, std::size_t cols);
// The k largest of `importance` (ties: the lower index first), as indices in increasing order.
std::vector<std::uint32_t> top_columns(const std::vector<double>& importance, std::size_t k);
// The whole rows of a row-major matrix with `cols` columns among its elements [first, first + n):
// the matrix's elements [begin, begin + rows * cols). The rows a rank's slice cuts are left to the
// CPU, as DeepSpeed leaves to the CPU the columns a rank's partition cuts (its layout keeps a
// column's elements together; zero's keeps a row's), so a rank updates k columns of each whole
// row it holds on the device, and the device holds rows * k elements whatever the columns.
struct WholeRows {
  std::size_t begin = 0, rows = 0;
};
WholeRows whole_rows(std::size_t first, std::size_t n, std::size_t cols);
// How many of a matrix's elements [first, first + n) lie in the columns `selected` (increasing).
std::size_t selected_in(std::size_t first, std::size_t n, std::size_t cols, const std::vector<std::uint32_t>& selected);

// What zero cannot run with ZenFlow, each with the key to change (settings_problems).
void problems(const EngineSettings& s, std::vector<SettingProblem>& out);

}  // namespace zero::zenflow
