// The advice: headroom, equal traffic decided by memory to spare, what would fit when nothing
// does (a smaller micro-batch keeping the global batch, checkpointing), sizes in fitting units.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/error.h"
#include "planner/advisor.h"
#include "planner/report.h"

namespace zero {
namespace {

const Plan& labelled(const std::vector<Plan>& plans, const std::string& label) {
  return *std::find_if(plans.begin(), plans.end(), [&](const Plan& p) { return p.label == label; });
}

bool any_contains(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

// A plan within the device but not within device x (1 - headroom) does not fit; with no headroom it does.
TEST(Advisor, HeadroomIsKeptFree) {
  PlanInput in;
  in.model = describe_counts(1'000'000'000, 103'000'000);
  const Plan p0 = plan_all(in, 0).front();
  Capacity c;
  c.device = p0.device.total() + p0.device.total() / 20;  // 5% above the peak
  EXPECT_FALSE(check_fit(p0, c).fits()) << "10% headroom by default";
  c.headroom = 0.0;
  EXPECT_TRUE(check_fit(p0, c).fits());
  c.headroom = 0.04;
  EXPECT_TRUE(check_fit(p0, c).fits());
}

// llama2-13b on 8 ranks with checkpointing, 90 GiB devices: stages 1 and 2 both fit and send the
// same bytes; stage 2, with more memory to spare, is recommended and the reason says so.
TEST(Advisor, EqualTrafficPrefersMoreMemoryToSpare) {
  PlanInput in;
  in.model = named_model("llama2-13b");
  in.ranks = 8;
  in.settings.precision.compute = Dtype::kBf16;
  in.checkpointing.enabled = true;
  Capacity c;
  c.device = 90ull << 30;
  const EstimateReport r = make_report(in, c, std::nullopt);
  const Plan& one = labelled(r.plans, "1");
  const Plan& two = labelled(r.plans, "2");
  ASSERT_TRUE(check_fit(one, c).fits());
  ASSERT_EQ(one.traffic.total(), two.traffic.total());
  ASSERT_GE(r.recommendation.index, 0);
  EXPECT_EQ(r.plans[r.recommendation.index].label, "2");
  EXPECT_TRUE(any_contains(r.recommendation.reasons, cat("with ", gib(one.device.total() - two.device.total()), " more to spare than stage 1")));
}

// gpt2-xl at micro-batch 8 on 8 x 80 GiB: nothing fits; the advice names micro-batch 4 with
// accumulation 2 (the largest divisor that fits; at it stage 1 already fits, the scores kept once a
// layer) and checkpointing, each with a plan that fits.
TEST(Advisor, WhenActivationsDoNotFitItNamesSmallerBatchesAndCheckpointing) {
  PlanInput in;
  in.model = named_model("gpt2-xl");
  in.ranks = 8;
  in.micro_batch = 8;
  Capacity c;
  c.device = 80ull << 30;
  const EstimateReport r = make_report(in, c, std::nullopt);
  ASSERT_LT(r.recommendation.index, 0);
  const auto& alt = r.recommendation.alternatives;
  EXPECT_TRUE(any_contains(alt, "micro-batch 4 with gradient accumulation 2 (the same global batch): stage 1 fits"));
  EXPECT_TRUE(any_contains(alt, "activation checkpointing"));
  PlanInput four = in;
  four.micro_batch = 4, four.gradient_accumulation_steps = 2;
  four.settings.stage = 1;
  EXPECT_TRUE(check_fit(plan(four), c).fits());
  in.settings.stage = 2;
  EXPECT_FALSE(check_fit(plan(in), c).fits());
  EXPECT_NE(format_report(r).find("on these ranks: micro-batch 4"), std::string::npos);
}

TEST(Advisor, SizesInUnitsThatFit) {
  EXPECT_EQ(gib(512), "512 B");
  EXPECT_EQ(gib(1536), "1.50 KiB");
  EXPECT_EQ(gib(5ull << 20), "5.00 MiB");
  EXPECT_EQ(gib(3ull << 30), "3.00 GiB");
  PlanInput in;
  in.model = describe_counts(1'000'000, 50'000);
  in.ranks = 2;
  const std::string small = format_report(make_report(in, {}, std::nullopt));
  EXPECT_NE(small.find("\nMiB per rank"), std::string::npos) << small;
  in.model = named_model("gpt2-xl");
  EXPECT_NE(format_report(make_report(in, {}, std::nullopt)).find("\nGiB per rank"), std::string::npos);
}

// The largest micro-batch that fits: it fits, one more does not, and checkpointing raises it.
TEST(Advisor, LargestMicroBatchThatFits) {
  for (const char* name : {"gpt2-xl", "llama2-13b"}) {
    PlanInput in;
    in.model = named_model(name);
    in.ranks = 8;
    in.settings.precision.compute = Dtype::kBf16;
    Capacity c;
    c.device = 80ull << 30;
    for (int stage = 0; stage <= 3; ++stage) {
      in.settings.stage = stage;
      for (bool ckpt : {false, true}) {
        in.checkpointing.enabled = ckpt;
        const auto most = largest_micro_batch(in, in.settings, c);
        ASSERT_TRUE(most) << name;
        PlanInput t = in;
        t.micro_batch = *most + 1;
        EXPECT_FALSE(check_fit(plan(t), c).fits()) << name << " stage " << stage << " micro-batch " << t.micro_batch;
        if (*most > 0) {
          t.micro_batch = *most;
          EXPECT_TRUE(check_fit(plan(t), c).fits()) << name << " stage " << stage;
        }
      }
      PlanInput plain = in, ck = in;
      plain.checkpointing.enabled = false;
      ck.checkpointing.enabled = true;
      EXPECT_GE(*largest_micro_batch(ck, in.settings, c), *largest_micro_batch(plain, in.settings, c));
    }
  }
  PlanInput counts;
  counts.model = describe_counts(1'000'000, 50'000);
  EXPECT_FALSE(largest_micro_batch(counts, counts.settings, Capacity{1ull << 30, std::nullopt, 0.1})) << "no activations: no answer";
}

}  // namespace
}  // namespace zero
