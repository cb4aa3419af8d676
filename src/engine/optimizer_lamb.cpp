// Lamb's bookkeeping shared by the optimizer placements: its trust ratio is per parameter tensor,
// while a part holds segments of several tensors (and, in stages 1-3, only a slice of each).
#include "common/error.h"
#include "engine/optimizer.h"

namespace zero {
namespace {

// The number of unit u's first parameter in the layout-wide numbering.
std::size_t first_param(const FlatLayout& layout, int u) {
  std::size_t n = 0;
  for (int v = 0; v < u; ++v) n += layout.unit(v).params.size();
  return n;
}

}  // namespace

std::size_t lamb_param_count(const FlatLayout& layout) { return first_param(layout, layout.num_units()); }

void lamb_add_part(const FlatLayout& layout, const OptimizerPart& part, const std::vector<LambNorms>& per_segment,
                   std::vector<LambNorms>& sums) {
  ZERO_CHECK(per_segment.size() == part.segments.size(), "Lamb sums for ", per_segment.size(), " of ", part.segments.size(), " segments");
  const std::size_t base = first_param(layout, part.unit);
  for (std::size_t k = 0; k < part.segments.size(); ++k) {
    const int param = part.segments[k].param;
    if (param < 0) continue;
    LambNorms& total = sums.at(base + static_cast<std::size_t>(param));
    total.param += per_segment[k].param;
    total.update += per_segment[k].update;
  }
}

std::vector<float> lamb_part_coefficients(const FlatLayout& layout, const OptimizerPart& part, const std::vector<float>& coef) {
  const std::size_t base = first_param(layout, part.unit);
  std::vector<float> out(part.segments.size(), 0.0f);
  for (std::size_t k = 0; k < part.segments.size(); ++k) {
    const int param = part.segments[k].param;
    if (param >= 0) out[k] = coef.at(base + static_cast<std::size_t>(param));
  }
  return out;
}

}  // namespace zero
