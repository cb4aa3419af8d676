// Mixed precision learns as fp32 does: on the default text (the Jargon File), the same small GPT
// (C=64, L=2), batch and 200 AdamW steps on 2 thread ranks reach the validation loss of fp32 in
// bf16 and in fp16, within what separates fp32 from itself.
//
// One seed is not the property: the difference of one bf16 run from one fp32 run moves with the
// GEMM kernels OpenBLAS picks (+0.74% with its own choice, +2.55% with OPENBLAS_CORETYPE=Haswell,
// which once failed a fixed 2% band), as it moves with the seed. So each precision trains from
// three seeds (initial weights and batch order), and the band for the difference of the means
// comes from fp32's own spread over those seeds, measured in the same run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "engine/text_run.h"

namespace zero {
namespace {

constexpr int kSeeds[] = {1, 2, 3};
constexpr int kSteps = 200;

float final_validation_loss(const std::string& precision, int seed) {
  nlohmann::json j = {{"train_micro_batch_size_per_gpu", 8},
                      {"gradient_accumulation_steps", 1},
                      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 3e-3}, {"betas", {0.9, 0.95}}, {"weight_decay", 0.1}}}}},
                      {"gradient_clipping", 1.0},
                      {"zero_optimization", {{"stage", 2}}},
                      {"train_steps", kSteps},
                      {"seed", seed},
                      {"model", {{"type", "gpt"}, {"vocab_size", 256}, {"n_ctx", 64}, {"n_embd", 64}, {"n_layer", 2}, {"n_head", 4}}},
                      {"data", {{"val_fraction", 0.05}, {"seed", seed}}}};
  if (precision != "fp32") j[precision] = {{"enabled", true}};
  return train_on_default_text(j, 2).final_val_loss;
}

struct Losses {
  std::vector<double> values;
  double mean() const { return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size()); }
  double range() const { return *std::max_element(values.begin(), values.end()) - *std::min_element(values.begin(), values.end()); }
};

Losses losses(const std::string& precision) {
  Losses l;
  for (int seed : kSeeds) l.values.push_back(final_validation_loss(precision, seed));
  std::printf("[ measured ] %s validation loss after %d steps, seeds 1-%zu:", precision.c_str(), kSteps, l.values.size());
  for (double v : l.values) std::printf(" %.4f", v);
  std::printf(" (mean %.4f, range %.4f)\n", l.mean(), l.range());
  return l;
}

TEST(PrecisionLearning, Bf16AndFp16LearnAsFp32DoesWithinFp32sOwnSpread) {
  const Losses fp32 = losses("fp32");
  EXPECT_LT(fp32.mean(), 3.2) << "the fp32 runs must have learned (ln 256 = 5.55 at the start)";
  // The mean of a precision may differ from fp32's by fp32's own range over the seeds: what a
  // change of seed alone moves an fp32 run by. Measured at 200 steps (2026-12-03, an AVX-512
  // machine): fp32 2.7834 2.7517 2.6964 (range 0.0870, 3.2% of the mean), bf16 mean -0.0329
  // (-1.20%), fp16 -0.0580 (-2.12%); with OPENBLAS_CORETYPE=Haswell fp32's range 0.0938, bf16
  // -0.0495, fp16 -0.0596; Sandybridge 0.0899, -0.0467, -0.0575. (At 300 steps, on an AVX2
  // machine: range 0.1141, bf16 -0.0254, fp16 -0.0589; 200 steps cost two thirds of 300, and a
  // change of seed moves fp32 by about the same share of its loss, 3-4%.) A precision that
  // learned 5% worse would fail.
  const double band = fp32.range();
  for (const char* p : {"bf16", "fp16"}) {
    const Losses mixed = losses(p);
    std::printf("[ measured ] %s - fp32: %+.4f (%+.2f%%); band %.4f\n", p, mixed.mean() - fp32.mean(),
                100 * (mixed.mean() / fp32.mean() - 1), band);
    EXPECT_LE(std::abs(mixed.mean() - fp32.mean()), band) << p;
  }
}

}  // namespace
}  // namespace zero
