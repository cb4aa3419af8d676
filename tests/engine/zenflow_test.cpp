// ZenFlow (zero_optimization.zenflow, optimizer_zenflow.cpp): one rank's optimizer fed gradients
// against an independent NumPy model of DeepSpeed's rule (zenflow_reference.py), with clipping too;
// learning on the default text within the spread of plain offload over seeds, reproducible run to
// run; in bf16 and fp16 near fp32 ZenFlow, the same at every stage; clipping end to end; bad input.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include "backends/registry.h"
#include "common/error.h"
#include "engine/optimizer.h"
#include "zero/communicator.h"
#include "engine/text_run.h"
#include "engine/zenflow.h"

// Both parts of an error message are in it.
#define EXPECT_THAT_ERROR(message, part1, part2)                                        \
  do {                                                                                  \
    const std::string m_ = (message);                                                   \
    EXPECT_NE(m_.find(part1), std::string::npos) << "no \"" << (part1) << "\" in: " << m_; \
    EXPECT_NE(m_.find(part2), std::string::npos) << "no \"" << (part2) << "\" in: " << m_; \
  } while (false)

namespace zero {
namespace {

// The model the rule is checked on: one unit, a weight (6, 10) and its bias, on 2 ranks, so that
// rank 0's slice ends within row 3 and rank 1's starts there and holds the bias.
constexpr int kRows = 6, kCols = 10, kWorld = 2, kSteps = 12;

UnitSpec rule_unit() {
  return {"layer", {{"w", {kRows, kCols}, Init::normal(0.5f), true}, {"b", {kCols}, Init::normal(0.5f), false}}, {}};
}

struct RuleCase {
  ZenflowOptions z;
  float clip = 0.0f;  // gradient_clipping (0: off)
  int rank = 0;
  std::string device = "cpu";
};

void write_floats(const std::filesystem::path& file, const std::vector<float>& x) {
  std::ofstream out(file, std::ios::binary | std::ios::app);
  out.write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size() * sizeof(float)));
}

// The slice's parameters, read through a host-tier buffer.
std::vector<float> read_params(Device& dev, const DeviceSpan& params) {
  DeviceBuffer host = dev.alloc(Tier::kHost, Category::kOther, params.size(), "read back");
  dev.copy(dev.compute(), host.span(), params);
  dev.compute().synchronize();
  const auto* p = static_cast<const float*>(dev.transport(host.span()));
  return {p, p + params.size()};
}

// Feeds kSteps random gradients to rank c.rank's ZenFlow optimizer and writes what the reference
// reads into `dir`.
void run_rule(const RuleCase& c, const AdamConfig& adam, const std::filesystem::path& dir) {
  Ledger ledger;
  std::unique_ptr<Device> dev = make_device(c.device, ledger);
  FlatLayout layout({rule_unit()}, kWorld);
  const std::size_t slice = layout.unit(0).slice;
  DeviceBuffer params = dev->alloc(Tier::kDevice, Category::kParameters, slice, "parameters");
  const std::vector<Segment> segments = layout.slice_segments(0, c.rank);
  dev->init(dev->compute(), layout.unit(0), segments, 7, params.span());
  OptimizerContext ctx{layout, *dev, {OptimizerPart{0, params.span(), segments, 0, 0, slice}}};
  ctx.state_numel = slice;
  ctx.seed = 7;
  ctx.offload.optimizer = true;
  ctx.offload.zenflow = c.z;
  const std::unique_ptr<Communicator> self = make_communicator("self");  // the norm over this rank's slice alone
  ctx.gradient_clipping = c.clip;
  ctx.norm_group = self.get();
  std::unique_ptr<ShardOptimizer> opt = make_optimizer(ctx);
  write_floats(dir / "initial.f32", read_params(*dev, params.span()));
  DeviceBuffer staged = dev->alloc(Tier::kHost, Category::kOther, slice, "gradient");
  DeviceBuffer reduced = dev->alloc(Tier::kDevice, Category::kGradients, slice, "reduced gradient");
  std::mt19937 rng(1000 + c.rank);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int t = 0; t < kSteps; ++t) {
    std::vector<float> g(slice);
    for (float& x : g) x = normal(rng);
    write_floats(dir / "grads.f32", g);
    std::copy(g.begin(), g.end(), static_cast<float*>(dev->transport(staged.span())));
    dev->copy(dev->compute(), reduced.span(), staged.span());
    opt->begin_micro_batch(true, true);
    opt->reduced(0, reduced.span(), Handle());
    opt->finish();
    if (c.clip > 0.0f) {  // the engine's clipping, by the step's gradient norm (one rank's here)
      const double coef = c.clip / (std::sqrt(opt->sum_squares()) + 1e-6);
      if (coef < 1.0) opt->scale(static_cast<float>(coef));
    }
    opt->step(adam_step_scalars(adam, t + 1));
    write_floats(dir / "params.f32", read_params(*dev, params.span()));
  }
  opt->synchronize();
  write_floats(dir / "params.f32", read_params(*dev, params.span()));
  nlohmann::json meta = {{"rows", kRows}, {"cols", kCols}, {"begin", layout.slice_offset(0, c.rank)}, {"slice", slice},
                         {"world", kWorld}, {"steps", kSteps}, {"topk_ratio", c.z.topk_ratio},
                         {"full_warm_up_rounds", c.z.full_warm_up_rounds}, {"update_interval", c.z.update_interval},
                         {"select_interval", c.z.select_interval}, {"overlap_step", c.z.overlap_step}, {"gradient_clipping", c.clip}, {"lr", adam.lr},
                         {"beta1", adam.beta1}, {"beta2", adam.beta2}, {"eps", adam.eps}, {"weight_decay", adam.weight_decay}};
  std::ofstream(dir / "meta.json") << meta.dump();
}

// Warm-up or not, selection every interval or once, the CPU's update at once or overlapped; both
// ranks' slices; the CPU device and the strict one (the column operations through the device
// layer's host-staged fallback, as on a GPU).
TEST(ZenflowRule, MatchesANumPyModelOfDeepSpeedsRule) {
  AdamConfig adam;
  adam.lr = 1e-2f;
  adam.weight_decay = 0.1f;
  std::vector<RuleCase> cases;
  for (bool overlap : {false, true})
    for (int rank : {0, 1}) {
      RuleCase c;
      // topk 3 of 10 columns, chosen every 3 steps; the CPU every 2 steps and before each choice; 1 warm-up step
      c.z = {true, 0.3, 3, 2, 1, overlap};
      c.rank = rank;
      cases.push_back(c);
      c.z = {true, 0.2, 0, 3, 0, overlap};  // select once, update every 3, no warm-up
      c.device = "strict";
      cases.push_back(c);
    }
  // Clipping at 1 (the slices' gradients have norms near 3, their means near 2): the warm-up's
  // step gradient and every CPU update's mean clipped, the device's gradients not.
  for (bool overlap : {false, true}) {
    RuleCase c;
    c.z = {true, 0.3, 3, 2, 1, overlap};
    c.clip = 1.0f;
    c.rank = overlap ? 1 : 0;
    cases.push_back(c);
  }
  const std::filesystem::path root = std::filesystem::temp_directory_path() / cat("zero-zenflow-rule-", ::getpid());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::filesystem::path dir = root / std::to_string(i);
    std::filesystem::create_directories(dir);
    run_rule(cases[i], adam, dir);
    const std::string command = cat("/usr/bin/python3 ", ZERO_TEST_SOURCE_DIR, "/engine/zenflow_reference.py ", dir.string());
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
  if (!HasFailure()) std::filesystem::remove_all(root);  // kept for a look when it fails
}


// selected_in (where a sub-group's piece of a matrix starts in the packed selected columns, and
// how many it holds: the NVMe tier's sub-groups cut rows anywhere) against a count element by
// element, over every range of a (5, 7) matrix's elements, for none, some and all columns.
TEST(ZenflowRule, SelectedInCountsTheSelectedColumnsElements) {
  constexpr std::size_t kMatrixCols = 7, kNumel = 5 * kMatrixCols;
  for (const std::vector<std::uint32_t>& selected : {std::vector<std::uint32_t>{}, {0, 3, 6}, {2}, {0, 1, 2, 3, 4, 5, 6}})
    for (std::size_t first = 0; first <= kNumel; ++first)
      for (std::size_t n = 0; first + n <= kNumel; ++n) {
        std::size_t count = 0;
        for (std::size_t e = first; e < first + n; ++e) count += std::count(selected.begin(), selected.end(), e % kMatrixCols);
        ASSERT_EQ(zenflow::selected_in(first, n, kMatrixCols, selected), count) << "elements [" << first << ", " << first + n << ")";
      }
}

// ---- learning on the default text ----

constexpr int kSeeds[] = {1, 2, 3};

// A small GPT (C=64, L=1) for 100 AdamW steps on 2 thread ranks, with plain offload or with
// ZenFlow: the top 10% of columns chosen every 2 steps, the CPU's update every 2 in the background.
// `extra`: top-level keys to add (bf16, train_steps, gradient_clipping); `stage`: the ZeRO stage.
TrainResult train_text(bool zenflow, int seed, const nlohmann::json& extra = nlohmann::json::object(), int stage = 2) {
  nlohmann::json zero = {{"stage", stage}, {"offload_optimizer", {{"device", "cpu"}}}};
  if (zenflow) {
    zero["zenflow"] = {{"topk_ratio", 0.1}, {"select_strategy", "step"}, {"select_interval", 2}, {"update_interval", 2},
                       {"full_warm_up_rounds", 0}, {"overlap_step", true}};
  }
  const nlohmann::json j = {{"train_micro_batch_size_per_gpu", 8},
                            {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 3e-3}, {"betas", {0.9, 0.95}}, {"weight_decay", 0.1}}}}},
                            {"zero_optimization", zero},
                            {"train_steps", 100},
                            {"seed", seed},
                            {"model", {{"type", "gpt"}, {"vocab_size", 256}, {"n_ctx", 32}, {"n_embd", 64}, {"n_layer", 1}, {"n_head", 4}}},
                            {"data", {{"val_fraction", 0.05}, {"seed", seed}}}};
  nlohmann::json config = j;
  config.update(extra);
  return train_on_default_text(config, 2);
}

struct Losses {
  std::vector<double> values;
  double mean() const { return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size()); }
  double range() const { return *std::max_element(values.begin(), values.end()) - *std::min_element(values.begin(), values.end()); }
};

// ZenFlow is not Adam (the columns not selected move every 2 steps, with a gradient up to 2
// steps old), so the property is the learning: its mean validation loss over three seeds is at
// most plain offload's mean plus plain offload's own range over those seeds (what a change of
// seed alone moves a plain run by), measured in the same run. Measured (2026-12-03, AVX2): plain
// 3.0733 3.0866 2.9971 (range 0.0895), ZenFlow 3.0780 3.0520 2.9252 (mean -0.0339). (DeepSpeed's
// tutorial intervals, 4 and 4, learn slower from scratch; see docs/offload.md.) And a ZenFlow run is reproducible: the same weights, bit for bit, twice.
TEST(ZenflowLearning, LearnsWithinPlainOffloadsSpreadAndRepeatsBitForBit) {
  Losses plain, zenflow;
  std::string plain_sha, zenflow_sha;
  for (int seed : kSeeds) {
    const TrainResult p = train_text(false, seed), z = train_text(true, seed);
    plain.values.push_back(p.final_val_loss);
    zenflow.values.push_back(z.final_val_loss);
    if (seed == kSeeds[0]) plain_sha = p.weights_sha256, zenflow_sha = z.weights_sha256;
  }
  std::printf("[ measured ] validation loss after 100 steps, seeds 1-3: plain offload %.4f %.4f %.4f (range %.4f), "
              "ZenFlow %.4f %.4f %.4f (mean %+.4f)\n", plain.values[0], plain.values[1], plain.values[2], plain.range(),
              zenflow.values[0], zenflow.values[1], zenflow.values[2], zenflow.mean() - plain.mean());
  EXPECT_LT(zenflow.mean(), 3.6) << "ZenFlow must have learned (ln 256 = 5.55 at the start)";
  EXPECT_LE(zenflow.mean(), plain.mean() + plain.range());
  EXPECT_NE(zenflow_sha, plain_sha) << "ZenFlow's run must differ from plain offload's";
  EXPECT_EQ(train_text(true, kSeeds[0]).weights_sha256, zenflow_sha) << "the same ZenFlow run twice";
}

// ZenFlow in 16-bit (DeepSpeed's ZenFlow configs train in bf16): 16-bit parameters and
// gradients, the CPU's masters, moments and summed gradient f32, the device's columns rounded to
// 16 bits every step. It is not fp32's arithmetic, so the property is the learning, after 30
// steps (to keep the test short): the validation loss within kSixteenBitTolerance of fp32
// ZenFlow's with the same seed. Measured (2026-12-04, AVX2), seeds 1-3 (ZERO_ZENFLOW_SEEDS=1
// runs them all): fp32 ZenFlow 3.3335 3.3379 3.3251 (range 0.0128); bf16 +0.0126 +0.0120 +0.0123;
// fp16 (dynamic loss scaling) +0.0004 +0.0177 -0.0004. (Plain offload in bf16 is at fp32's,
// -0.004 to -0.018: bf16 ZenFlow's offset is its device columns' updates rounded to bf16 every
// step, as DeepSpeed's are.) And bf16 ZenFlow gives the same weights bit for bit run to run and
// at stages 1, 2 and 3, as fp32 ZenFlow does.
constexpr double kSixteenBitTolerance = 0.03;

TEST(ZenflowLearning, SixteenBitLearnsAsFp32AndIsTheSameAtEveryStage) {
  const nlohmann::json steps = {{"train_steps", 30}};
  const nlohmann::json bf16 = {{"train_steps", 30}, {"bf16", {{"enabled", true}}}}, fp16 = {{"train_steps", 30}, {"fp16", {{"enabled", true}}}};
  for (int seed : {1, 2, 3}) {
    if (std::getenv("ZERO_ZENFLOW_SEEDS") == nullptr && seed > 1) break;  // the other seeds: measuring the tolerance
    const TrainResult f = train_text(true, seed, steps), b = train_text(true, seed, bf16), h = train_text(true, seed, fp16);
    std::printf("[ measured ] seed %d, validation loss after 30 steps: fp32 ZenFlow %.4f, bf16 %+.4f, fp16 %+.4f\n", seed,
                f.final_val_loss, b.final_val_loss - f.final_val_loss, h.final_val_loss - f.final_val_loss);
    if (seed > 1) continue;
    EXPECT_LT(b.final_val_loss, 4.0) << "bf16 ZenFlow must have learned (ln 256 = 5.55 at the start)";
    EXPECT_NEAR(b.final_val_loss, f.final_val_loss, kSixteenBitTolerance);
    EXPECT_NEAR(h.final_val_loss, f.final_val_loss, kSixteenBitTolerance);
    EXPECT_NE(b.weights_sha256, f.weights_sha256) << "bf16 must not train as fp32";
    EXPECT_EQ(train_text(true, seed, bf16).weights_sha256, b.weights_sha256) << "the same bf16 ZenFlow run twice";
    for (int stage : {1, 3}) EXPECT_EQ(train_text(true, seed, bf16, stage).weights_sha256, b.weights_sha256) << "stage " << stage;
  }
}

// gradient_clipping through the engine (2 ranks: the CPU mean's norm summed over both): a
// threshold no norm reaches changes no bit; 0.1, far below the step gradients' norms (2.3-2.6 in
// the first steps), still learns (the rule's arithmetic is ZenflowRule's). Measured (2026-12-04,
// AVX2), after 20 steps: unclipped 3.5783, clipped at 0.1 3.5766.
TEST(ZenflowLearning, ClippingAtAHugeThresholdChangesNothingAndASmallOneLearns) {
  const TrainResult plain = train_text(true, 1, {{"train_steps", 20}});
  const TrainResult huge = train_text(true, 1, {{"train_steps", 20}, {"gradient_clipping", 1e6}});
  const TrainResult small = train_text(true, 1, {{"train_steps", 20}, {"gradient_clipping", 0.1}});
  std::printf("[ measured ] validation loss after 20 steps: unclipped %.4f, clipped at 0.1 %.4f\n", plain.final_val_loss, small.final_val_loss);
  EXPECT_EQ(huge.weights_sha256, plain.weights_sha256);
  EXPECT_NE(small.weights_sha256, plain.weights_sha256);
  EXPECT_LT(small.final_val_loss, 4.0) << "clipped ZenFlow must have learned (ln 256 = 5.55 at the start)";
}

// ---- bad input: refused while the config is read, before any rank starts ----

std::string zenflow_error(const nlohmann::json& zenflow, const nlohmann::json& zero_extra = nlohmann::json::object(),
                          const nlohmann::json& top_extra = nlohmann::json::object()) {
  nlohmann::json zero = {{"stage", 2}, {"offload_optimizer", {{"device", "cpu"}}}, {"zenflow", zenflow}};
  if (!zero_extra.is_null()) zero.update(zero_extra);
  nlohmann::json j = {{"train_batch_size", 8}, {"zero_optimization", zero}};
  if (!top_extra.is_null()) j.update(top_extra);
  try {
    parse_config(j, 2);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError for " << j.dump();
  return "";
}

TEST(ZenflowConfig, EachKeysRangeAndThePlacementAreCheckedFirst) {
  const nlohmann::json good = {{"topk_ratio", 0.1}, {"select_strategy", "step"}, {"select_interval", 4}, {"update_interval", 4}};
  auto with = [&](const char* key, const nlohmann::json& value) {
    nlohmann::json z = good;
    z[key] = value;
    return z;
  };
  EXPECT_TRUE(parse_config({{"train_batch_size", 8}, {"zero_optimization", {{"stage", 1}, {"offload_optimizer", {{"device", "cpu"}}}, {"zenflow", good}}}}, 2)
                  .engine.offload.zenflow.enabled);
  const std::string key = "zero_optimization.zenflow.";
  for (double r : {0.0, -0.1, 1.5}) EXPECT_THAT_ERROR(zenflow_error(with("topk_ratio", r)), key + "topk_ratio is ", "it must be in (0, 1]");
  EXPECT_THAT_ERROR(zenflow_error(with("update_interval", 0)), key + "update_interval is 0", "it must be >= 1 step");
  EXPECT_THAT_ERROR(zenflow_error(with("select_interval", 0)), key + "select_interval must be at least 1, not 0", "");
  EXPECT_THAT_ERROR(zenflow_error(with("select_interval", 2)), key + "select_interval is 2, below update_interval 4", "DeepSpeed requires");
  EXPECT_THAT_ERROR(zenflow_error(with("full_warm_up_rounds", -1)), key + "full_warm_up_rounds is -1", "it must be >= 0");
  EXPECT_THAT_ERROR(zenflow_error(with("select_strategy", "often")), key + "select_strategy is \"often\"", "\"auto\", \"step\" or \"epoch\"");
  EXPECT_THAT_ERROR(zenflow_error(with("select_strategy", "epoch")), key + "select_strategy = \"epoch\" is not supported yet", "use \"step\"");
  EXPECT_THAT_ERROR(zenflow_error(with("select_strategy", "auto")), key + "select_interval is set with select_strategy \"auto\"", "remove it");
  EXPECT_THAT_ERROR(zenflow_error(with("update_interval", "auto")), key + "update_interval = \"auto\"", "set a number of steps");
  EXPECT_THAT_ERROR(zenflow_error(with("offload", true)), key + "offload = true is known but not supported yet", "");
  EXPECT_THAT_ERROR(zenflow_error(with("topk", 0.1)), key + "topk", "topk_ratio");  // an unknown key, with the nearest
  // The placement: with the CPU's optimizer (its state in host memory or on NVMe), at stage 1, 2 or 3, with Adam, unclipped.
  const std::string z = "zero_optimization.zenflow ";
  EXPECT_THAT_ERROR(zenflow_error(good, {{"offload_optimizer", {{"device", "none"}}}}), z + "is ZenFlow's offload", "device \"cpu\" or \"nvme\"");
  EXPECT_TRUE(parse_config({{"train_batch_size", 8}, {"zero_optimization", {{"stage", 3}, {"offload_optimizer", {{"device", "cpu"}}}, {"zenflow", good}}}}, 2)
                  .engine.offload.zenflow.enabled) << "ZenFlow at stage 3";
  EXPECT_THAT_ERROR(zenflow_error(good, {{"stage", 0}}), z + "needs ZeRO stage 1, 2 or 3; stage is 0", "");
  EXPECT_THAT_ERROR(zenflow_error(good, {{"stage", 3}, {"offload_param", {{"device", "cpu"}}}}), z + "with offload_param is not supported", "remove offload_param");
  EXPECT_TRUE(parse_config({{"train_batch_size", 8}, {"zero_optimization", {{"stage", 2}, {"offload_optimizer", {{"device", "nvme"}, {"nvme_path", "/tmp"}}}, {"zenflow", good}}}}, 2)
                  .engine.offload.zenflow.enabled) << "ZenFlow on the NVMe tier";
  EXPECT_THAT_ERROR(zenflow_error(good, {{"offload_optimizer", {{"device", "cpu"}, {"delayed_update", {{"enabled", true}}}}}}), z + "and offload_optimizer.delayed_update", "keep one");
  for (const char* dtype : {"bf16", "fp16"}) {
    EXPECT_TRUE(parse_config({{"train_batch_size", 8}, {dtype, {{"enabled", true}}}, {"zero_optimization", {{"stage", 2}, {"offload_optimizer", {{"device", "cpu"}}}, {"zenflow", good}}}}, 2)
                    .engine.offload.zenflow.enabled) << "ZenFlow in " << dtype;
  }
  EXPECT_TRUE(parse_config({{"train_batch_size", 8}, {"gradient_clipping", 1.0}, {"zero_optimization", {{"stage", 2}, {"offload_optimizer", {{"device", "cpu"}}}, {"zenflow", good}}}}, 2)
                  .engine.offload.zenflow.enabled) << "ZenFlow with gradient_clipping";
  EXPECT_THAT_ERROR(zenflow_error(good, {}, {{"optimizer", {{"type", "Lamb"}}}}), z + "runs Adam/AdamW on both sides", "");
  // On the NVMe tier, the same refusals.
  const nlohmann::json nvme = {{"device", "nvme"}, {"nvme_path", "/tmp"}};
  EXPECT_THAT_ERROR(zenflow_error(good, {{"stage", 0}, {"offload_optimizer", nvme}}), z + "needs ZeRO stage 1, 2 or 3; stage is 0", "");
  EXPECT_TRUE(parse_config({{"train_batch_size", 8}, {"bf16", {{"enabled", true}}}, {"zero_optimization", {{"stage", 2}, {"offload_optimizer", nvme}, {"zenflow", good}}}}, 2)
                  .engine.offload.zenflow.enabled) << "ZenFlow in bf16 on the NVMe tier";
  EXPECT_THAT_ERROR(zenflow_error(good, {{"offload_optimizer", nvme}}, {{"gradient_clipping", 1.0}}), z + "with gradient_clipping on the NVMe tier is not supported yet",
                    "set gradient_clipping to 0");
}

}  // namespace
}  // namespace zero
