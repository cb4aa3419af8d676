// 1-bit Adam ("OneBitAdam", engine/optimizer_onebit.cpp) in the engine, on thread ranks: the bytes
// of a step after the freeze are the compressed all-reduce's formula, counted by the
// communicators; every rank holds the same weights; it learns the default text as Adam does,
// within Adam's own spread over seeds; the same run twice gives the same SHA-256; and what it
// cannot do is refused before any work. (Its compressed all-reduce alone is checked against
// NumPy in compressed_all_reduce_test.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "config/config.h"
#include "data/load.h"
#include "engine/mlp_run.h"
#include "engine/text_run.h"
#include "train/trainer.h"

namespace zero {
namespace {

using testing::MlpRun;
using testing::run_threads;
using testing::same_bits;

MlpRun onebit_run(int steps, std::int64_t freeze_step) {
  MlpRun run;
  run.steps = steps;
  run.optimizer = OptimizerKind::kOneBitAdam;
  run.onebit.freeze_step = freeze_step;
  return run;
}

// Bytes one rank sends in a step after the freeze, computed here from the layout: per unit of P
// padded elements, C = P rounded up to N * lcm(N, 8); B = sum of C / (8 N); 2 (N-1) (B + 4 units).
std::uint64_t compressed_step_bytes(const MlpShape& shape, int n) {
  const FlatLayout layout(Mlp(shape).units(), n);
  const std::size_t ranks = static_cast<std::size_t>(n), quantum = ranks * std::lcm(ranks, std::size_t{8});
  std::uint64_t block = 0;
  for (int u = 0; u < layout.num_units(); ++u) block += (layout.unit(u).padded + quantum - 1) / quantum * quantum / ranks / 8;
  return 2ull * (ranks - 1) * (block + 4ull * static_cast<std::uint64_t>(layout.num_units()));
}

TEST(OneBitAdam, BytesAfterTheFreezeAreTheFormulasAndRanksAgree) {
  for (int n : {2, 3, 4}) {
    const MlpShape shape;
    const std::uint64_t fp32_all_reduce = 2ull * (n - 1) * 4 * FlatLayout(Mlp(shape).units(), n).padded_numel() / n;
    const std::vector<testing::RankResult> warm = run_threads(onebit_run(3, 3), n);  // the last step is the warm-up's
    const std::vector<testing::RankResult> frozen = run_threads(onebit_run(5, 3), n);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(warm[r].step_traffic.total_sent(), fp32_all_reduce) << "N=" << n << " rank " << r;
      EXPECT_EQ(frozen[r].step_traffic.total_sent(), compressed_step_bytes(shape, n)) << "N=" << n << " rank " << r;
      EXPECT_TRUE(same_bits(frozen[r].params, frozen[0].params)) << "N=" << n << ": rank " << r << " holds other weights";
    }
    std::printf("[ measured ] N=%d: bytes sent per rank per step: warm-up %llu (f32 all-reduce), after the freeze %llu (%.4f of it)\n", n,
                static_cast<unsigned long long>(warm[0].step_traffic.total_sent()),
                static_cast<unsigned long long>(frozen[0].step_traffic.total_sent()),
                static_cast<double>(frozen[0].step_traffic.total_sent()) / static_cast<double>(warm[0].step_traffic.total_sent()));
    // It trained: the compressed steps moved the weights past the warm-up's
    EXPECT_FALSE(same_bits(frozen[0].params, warm[0].params));
  }
}

// Mixed precision: the momentum is compressed in f32 whatever the compute dtype, so the bytes are
// the same (fp16 adds its overflow check: one byte to each other rank); the 16-bit parameters every
// rank rounds from its masters agree.
TEST(OneBitAdam, MixedPrecisionCompressesTheSameBytes) {
  for (Dtype dtype : {Dtype::kBf16, Dtype::kF16}) {
    MlpRun run = onebit_run(6, 3);
    run.dtype = dtype;
    const std::vector<testing::RankResult> r = run_threads(run, 2);
    const std::uint64_t overflow_check = dtype == Dtype::kF16 ? 1 : 0;
    EXPECT_EQ(r[0].step_traffic.total_sent(), compressed_step_bytes(run.shape, 2) + overflow_check) << dtype_label(dtype);
    EXPECT_TRUE(same_bits(r[1].params, r[0].params)) << dtype_label(dtype);
    EXPECT_FALSE(r[0].skipped.back()) << dtype_label(dtype);
  }
}

TEST(OneBitAdam, TheFirstStepOnlyInitialisesAsDeepSpeeds) {
  const std::vector<float> init = run_threads(onebit_run(0, 5), 2)[0].params;
  EXPECT_TRUE(same_bits(run_threads(onebit_run(1, 5), 2)[0].params, init));
  EXPECT_FALSE(same_bits(run_threads(onebit_run(2, 5), 2)[0].params, init));
}

TEST(OneBitAdam, RefusedWithZeroStagesAndBadFreezeStep) {
  for (int stage : {1, 2, 3}) {
    MlpRun run = onebit_run(1, 1);
    run.stage = stage;
    try {
      run_threads(run, 2);
      ADD_FAILURE() << "stage " << stage << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("OneBitAdam needs zero_optimization.stage 0"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("1bit-Adam is not compatible with ZeRO"), std::string::npos) << e.what();
    }
  }
  MlpRun run = onebit_run(1, -1);
  EXPECT_THROW(
      try { run_threads(run, 2); } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("freeze_step is -1; it must be >= 0"), std::string::npos) << e.what();
        throw;
      },
      ConfigError);
}

// ---- 0/1 Adam ----

// DeepSpeed's ZeroOneAdam schedule, restated from its step() (zoadam.py): for steps 1..n, what
// each sends: 'R' the stage's f32 all-reduce, 'C' one compressed all-reduce, '0' nothing.
std::string zero_one_schedule(const ZeroOneAdamConfig& c, int n) {
  std::string out;
  bool enable = true, freeze = false;
  std::int64_t var_interval = 1, var_counter = 0, local_interval = 1, local_counter = 0;
  for (std::int64_t step = 1; step <= n; ++step) {
    if (step == 1) {  // the initialisation step (its compression of a zero buffer sends nothing here)
      out += 'R';
      continue;
    }
    if (!freeze) out += enable ? 'R' : 'C';
    else out += step % local_interval == 0 ? 'C' : '0';
    if (!freeze) {
      if (step % var_interval == 0 && ++var_counter == c.var_update_scaler) var_counter = 0, var_interval *= 2;
      enable = (step + 1) % var_interval == 0;
    } else if (++local_counter == c.local_step_scaler) {
      local_counter = 0, local_interval = std::min(c.local_step_clipper, local_interval * 2);
    }
    if (step > c.var_freeze_step) freeze = true, enable = false;
  }
  return out;
}

struct ZeroOneSteps {
  std::string kinds;                // per step, as zero_one_schedule's letters, from the bytes sent
  std::vector<std::vector<float>> params;  // per rank, after the last step
};

ZeroOneSteps run_zero_one(const ZeroOneAdamConfig& z, int steps, int n) {
  MlpRun run;
  run.optimizer = OptimizerKind::kZeroOneAdam;
  run.zero_one = z;
  const MlpShape shape;
  const std::uint64_t reduce = 2ull * (n - 1) * 4 * FlatLayout(Mlp(shape).units(), n).padded_numel() / n;
  const std::uint64_t compressed = compressed_step_bytes(shape, n);
  ZeroOneSteps out;
  out.params.resize(n);
  ThreadWorld world(n);
  world.run([&](int r) {
    Ledger ledger;
    auto comm = world.communicator(r, &ledger);
    Mlp mlp(shape);
    Engine engine(testing::engine_config(run), mlp, *comm, ledger);
    const int rows = run.global_batch / n;
    for (int s = 0; s < steps; ++s) {
      mlp.set_batch(mlp_synthetic_batch(shape, run.seed, s, r * rows, rows));
      engine.train_step();
      const std::uint64_t sent = engine.last_step_traffic().total_sent();
      if (r == 0) out.kinds += sent == reduce ? 'R' : sent == compressed ? 'C' : sent == 0 ? '0' : '?';
    }
    out.params[r] = engine.full_parameters();
  });
  return out;
}

TEST(ZeroOneAdam, SendsWhatDeepSpeedsScheduleSaysAndRanksAgreeAfterASync) {
  ZeroOneAdamConfig z;
  z.var_freeze_step = 10, z.var_update_scaler = 2, z.local_step_scaler = 2, z.local_step_clipper = 4;
  const std::string want = zero_one_schedule(z, 24);
  const int last_sync = static_cast<int>(want.find_last_of('C')) + 1;
  for (int n : {2, 3}) {
    const ZeroOneSteps got = run_zero_one(z, last_sync, n);
    std::printf("[ measured ] N=%d, steps 1-%d: %s (R: f32 all-reduce, C: compressed, 0: nothing)\n", n, last_sync, got.kinds.c_str());
    EXPECT_EQ(got.kinds, want.substr(0, static_cast<std::size_t>(last_sync))) << "N=" << n;
    for (int r = 1; r < n; ++r) EXPECT_TRUE(same_bits(got.params[r], got.params[0])) << "N=" << n << " rank " << r;
  }
  // Between synchronisations the ranks step on their own gradients: their weights differ
  const ZeroOneSteps between = run_zero_one(z, last_sync - 1, 2);
  ASSERT_EQ(want[static_cast<std::size_t>(last_sync - 2)], '0');
  EXPECT_FALSE(same_bits(between.params[1], between.params[0]));
}

// ---- learning, on the default text ----

struct Outcome {
  float val_loss;
  std::string sha256;
};

// A small GPT for 150 steps on 2 thread ranks. 1-bit Adam freezes after 50 (the paper warms up for
// 15-25% of a run; frozen after 20 of 150, before the model settled, it learned 9% worse); 0/1 Adam
// freezes its variance after 50 and takes local steps from step 76 (interval 2).
constexpr int kSteps = 150;

Outcome train_text(const std::string& optimizer, int seed) {
  nlohmann::json params = {{"lr", 3e-3}, {"betas", {0.9, 0.95}}, {"weight_decay", 0.1}};
  if (optimizer == "OneBitAdam") params["freeze_step"] = 50;
  if (optimizer == "ZeroOneAdam") params.update({{"var_freeze_step", 50}, {"local_step_scaler", 25}, {"local_step_clipper", 2}});
  nlohmann::json j = {{"train_micro_batch_size_per_gpu", 8},
                      {"gradient_accumulation_steps", 1},
                      {"optimizer", {{"type", optimizer}, {"params", params}}},
                      {"gradient_clipping", 1.0},
                      {"train_steps", kSteps},
                      {"seed", seed},
                      {"model", {{"type", "gpt"}, {"vocab_size", 256}, {"n_ctx", 32}, {"n_embd", 32}, {"n_layer", 1}, {"n_head", 4}}},
                      {"data", {{"val_fraction", 0.05}, {"seed", seed}}}};
  const TrainResult result = train_on_default_text(j, 2);
  return {result.final_val_loss, result.weights_sha256};
}

double mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); }

// AdamW's validation losses over seeds 1-3 (computed once for the tests below), and their range:
// what a change of seed alone moves Adam by.
const std::vector<double>& adam_losses() {
  static const std::vector<double> losses = [] {
    std::vector<double> v;
    for (int seed : {1, 2, 3}) v.push_back(train_text("AdamW", seed).val_loss);
    return v;
  }();
  return losses;
}
double adam_range() { return *std::max_element(adam_losses().begin(), adam_losses().end()) - *std::min_element(adam_losses().begin(), adam_losses().end()); }

// The optimizer's mean over seeds 1-3 against Adam's, printed; and the same run twice, the same bits.
double difference_from_adam(const std::string& optimizer) {
  std::vector<double> losses;
  std::string first_sha;
  for (int seed : {1, 2, 3}) {
    const Outcome o = train_text(optimizer, seed);
    losses.push_back(o.val_loss);
    if (seed == 1) first_sha = o.sha256;
  }
  const std::vector<double>& adam = adam_losses();
  std::printf("[ measured ] validation loss after %d steps, seeds 1-3: AdamW %.4f %.4f %.4f (range %.4f); %s %.4f %.4f %.4f; "
              "mean difference %+.4f\n", kSteps, adam[0], adam[1], adam[2], adam_range(), optimizer.c_str(), losses[0], losses[1],
              losses[2], mean(losses) - mean(adam));
  EXPECT_LT(mean(adam), 3.5) << "Adam must have learned (ln 256 = 5.55 at the start)";
  EXPECT_EQ(train_text(optimizer, 1).sha256, first_sha) << "the same " << optimizer << " run twice gave other weights";
  return mean(losses) - mean(adam);
}

// Measured here (2026-12-03, AVX2): AdamW 2.8831 2.8663 2.8039 (range 0.0792); 1-bit Adam 2.8760
// 2.8366 2.9090 (+0.0228).
TEST(OneBitAdamLearning, LearnsAsAdamWithinAdamsSpreadAndRepeatsBitForBit) {
  EXPECT_LE(std::abs(difference_from_adam("OneBitAdam")), adam_range());
}

// 0/1 Adam learns measurably worse on so short a run (its variance phase averages 1-bit
// gradients, not momenta): 3.0062 2.9266 3.0213, +0.1340, 1.7 of Adam's ranges (seeds 4 and 5:
// 3.1032, 3.0400). Held to three ranges: a 0/1 Adam that learned 8% worse would fail.
TEST(OneBitAdamLearning, ZeroOneAdamWithinThreeOfAdamsSpreadsAndRepeatsBitForBit) {
  EXPECT_LE(std::abs(difference_from_adam("ZeroOneAdam")), 3 * adam_range());
}

}  // namespace
}  // namespace zero
