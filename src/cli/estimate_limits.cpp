#include "cli/estimate_limits.h"

#include "common/error.h"

namespace zero::cli {
namespace {

// Parameters of a GPT shape, as GptShape::num_parameters counts them, without overflow.
long double gpt_parameters(const GptShape& s) {
  const long double V = s.vocab_size, T = s.seq_len, C = s.channels, L = s.layers;
  return V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C;
}

// An upper bound on Gpt::activation_bytes: every buffer of gpt.cpp's activation_plan, which are
// multiples of B*T*C (16 per block, 16 more), B*T (2V, 4 per block, 4 more) and B*H*T*T (2 per
// block, 2 more), in fp32.
long double gpt_activation_bound(const GptShape& s, int micro_batch) {
  const long double B = micro_batch, T = s.seq_len, C = s.channels, L = s.layers, V = s.vocab_size, H = s.heads;
  return 4 * (B * T * C * (16 * L + 16) + B * T * (2 * V + 4 * L + 4) + B * H * T * T * (2 * L + 2));
}

}  // namespace

void check_gpt_limits(const GptShape& shape, const std::string& source) {
  shape.validate();
  if (shape.layers > kMaxUnits - 2) {
    throw ConfigError(cat("[estimate] ", source, ": n_layer ", shape.layers, " is more blocks than zero estimate plans (at most ",
                          kMaxUnits - 2, ")"));
  }
  const long double n = gpt_parameters(shape);
  if (n > kMaxParameters) {
    throw ConfigError(cat("[estimate] ", source, ": the shape ", shape.describe(), " has about ", static_cast<double>(n),
                          " parameters, more than zero estimate plans (2^44, about 1.8e13)"));
  }
}

void check_count_limits(std::int64_t parameters, std::int64_t largest_unit) {
  if (static_cast<long double>(parameters) > kMaxParameters) {
    throw ConfigError(cat("[estimate] --params ", parameters, " is more than zero estimate plans (2^44, about 1.8e13)"));
  }
  if (largest_unit > 0 && largest_unit <= parameters && (parameters + largest_unit - 1) / largest_unit > kMaxUnits) {
    throw ConfigError(cat("[estimate] --params ", parameters, " with --largest-unit ", largest_unit, " makes ",
                          (parameters + largest_unit - 1) / largest_unit, " units, more than zero estimate plans (",
                          kMaxUnits, "): give the largest unit as a transformer block's parameters, or the embedding's"));
  }
}

void check_run_limits(const PlanInput& in) {
  if (in.ranks > kMaxRanks) throw ConfigError(cat("[estimate] --ranks ", in.ranks, " is more than zero estimate plans (", kMaxRanks, ")"));
  if (in.ranks_per_node > kMaxRanksPerNode || in.ranks_per_node > in.ranks) {
    throw ConfigError(cat("[estimate] --ranks-per-node ", in.ranks_per_node, " must be at most --ranks (", in.ranks,
                          ") and at most ", kMaxRanksPerNode));
  }
  const auto units = static_cast<std::int64_t>(in.model.units.size());
  if (std::int64_t{in.gradient_accumulation_steps} * units > kMaxWalk) {
    throw ConfigError(cat("[estimate] gradient accumulation of ", in.gradient_accumulation_steps, " micro-batches over ",
                          units, " units is more than zero estimate walks (micro-batches x units at most ", kMaxWalk,
                          "): plan with fewer accumulation steps"));
  }
  if (in.model.gpt && gpt_activation_bound(*in.model.gpt, in.micro_batch) > kMaxActivationBytes) {
    throw ConfigError(cat("[estimate] the activations of a micro-batch of ", in.micro_batch, " sequences of the shape ",
                          in.model.gpt->describe(), " come to more than 2^60 bytes; use a smaller --micro-batch or --seq-len"));
  }
}

}  // namespace zero::cli
