#include "engine/zenflow.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"

namespace zero::zenflow {

bool in_warm_up(const ZenflowOptions& z, std::int64_t t) { return t < z.full_warm_up_rounds; }

bool is_selection_step(const ZenflowOptions& z, std::int64_t t) {
  if (in_warm_up(z, t)) return false;
  return t == z.full_warm_up_rounds || (z.select_interval > 0 && t % z.select_interval == 0);
}

bool is_update_step(const ZenflowOptions& z, std::int64_t t) {
  if (in_warm_up(z, t)) return true;
  return (t + 1 - z.full_warm_up_rounds) % z.update_interval == 0 || (z.select_interval > 0 && (t + 1) % z.select_interval == 0);
}

std::size_t columns_to_select(const ZenflowOptions& z, std::size_t cols) {
  return std::min(cols, static_cast<std::size_t>(z.topk_ratio * static_cast<double>(cols)));
}

std::vector<std::uint32_t> top_columns(const std::vector<double>& importance, std::size_t k) {
  std::vector<std::uint32_t> order(importance.size());
  std::iota(order.begin(), order.end(), 0u);
  k = std::min(k, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](std::uint32_t a, std::uint32_t b) { return importance[a] > importance[b] || (importance[a] == importance[b] && a < b); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

WholeRows whole_rows(std::size_t first, std::size_t n, std::size_t cols) {
  const std::size_t begin = (first + cols - 1) / cols * cols, end = (first + n) / cols * cols;
  return {begin, end > begin ? (end - begin) / cols : 0};
}

std::size_t selected_in(std::size_t first, std::size_t n, std::size_t cols, const std::vector<std::uint32_t>& selected) {
  // Selected columns below column c, for c in [0, cols].
  const auto below = [&](std::size_t c) { return static_cast<std::size_t>(std::lower_bound(selected.begin(), selected.end(), c) - selected.begin()); };
  // Selected elements among a matrix's elements [0, e).
  const auto upto = [&](std::size_t e) { return e / cols * selected.size() + below(e % cols); };
  return upto(first + n) - upto(first);
}

void problems(const EngineSettings& s, std::vector<SettingProblem>& out) {
  const ZenflowOptions& z = s.offload.zenflow;
  if (!z.enabled) return;
  const std::string key = "zero_optimization.zenflow";
  if (!(z.topk_ratio > 0.0 && z.topk_ratio <= 1.0)) out.push_back({key + ".topk_ratio", cat("is ", z.topk_ratio, "; it must be in (0, 1]")});
  if (z.update_interval < 1) out.push_back({key + ".update_interval", cat("is ", z.update_interval, "; it must be >= 1 step")});
  if (z.select_interval < 0) out.push_back({key + ".select_interval", cat("is ", z.select_interval, "; it must be >= 1 step, or 0 (once, after the warm-up)")});
  if (z.full_warm_up_rounds < 0) out.push_back({key + ".full_warm_up_rounds", cat("is ", z.full_warm_up_rounds, "; it must be >= 0")});
  if (z.select_interval > 0 && z.update_interval >= 1 && z.select_interval < z.update_interval) {
    out.push_back({key + ".select_interval", cat("is ", z.select_interval, ", below update_interval ", z.update_interval,
                                                 "; DeepSpeed requires select_interval >= update_interval")});
  }
  const OffloadOptions& o = s.offload;
  if (!o.optimizer) {
    out.push_back({key, "is ZenFlow's offload: it needs zero_optimization.offload_optimizer.device \"cpu\" or \"nvme\" (DeepSpeed: "
                        "\"Zenflow must be used with cpu offload\")"});
  }
  if (s.stage == 0) out.push_back({key, "needs ZeRO stage 1, 2 or 3; stage is 0 (offload needs a shard): set zero_optimization.stage"});
  if (o.params) {
    out.push_back({key, "with offload_param is not supported (the device updates its columns in the parameter shard it holds): "
                        "remove offload_param"});
  }
  if (o.delayed_update) {
    out.push_back({key, "and offload_optimizer.delayed_update both run the CPU's update behind the next steps: keep one "
                        "(ZenFlow's overlap_step is its own delayed update)"});
  }
  if (s.gradient_clipping > 0.0f && o.optimizer_nvme) {
    out.push_back({key, "with gradient_clipping on the NVMe tier is not supported yet (the norm of the CPU's summed gradient would "
                        "take one more pass through the swap file): use offload_optimizer.device \"cpu\", or set gradient_clipping to 0"});
  }
  if (s.optimizer != OptimizerKind::kAdam) out.push_back({key, "runs Adam/AdamW on both sides: set optimizer.type to Adam or AdamW"});
}

}  // namespace zero::zenflow
