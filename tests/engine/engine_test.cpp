// The engine on in-process thread ranks: stage equivalence, memory and traffic, measured.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "comm/thread_world.h"
#include "common/error.h"
#include "engine/gpt_run.h"
#include "engine/mlp_run.h"

namespace zero {
namespace {

using testing::MlpRun;
using testing::RankResult;
using testing::run_threads;
using testing::same_bits;
using testing::tied_shape;

std::vector<RankResult> run_single(MlpRun run) {  // one process, the whole global batch
  Ledger ledger;
  auto comm = make_communicator("self");
  return {testing::train_mlp(run, *comm, ledger)};
}

// Parameterised over the world size, the MLP's shape (plain or tied), the device backend
// ("strict" makes engine memory unreachable from the host except through the device seam) and
// the precision: f32, or mixed precision with bf16 or f16 parameters, gradients and collectives.
class StageEquivalence : public ::testing::TestWithParam<std::tuple<int, bool, const char*, Dtype>> {
 protected:
  MlpRun base() const {
    const auto [n, tied, device, dtype] = GetParam();
    MlpRun run;
    run.device = device;
    run.dtype = dtype;
    if (tied) run.shape = tied_shape();
    return run;
  }
  int world() const { return std::get<0>(GetParam()); }
};

// Against one process on the same global batch, per parameter tensor.
// f32: max|sharded - single| / max|single|. Only the order in which the per-row gradient
// contributions are summed differs (per rank, then across ranks, versus all rows at once): about
// an ulp of the gradient, which Adam turns into about an ulp of the parameters per step;
// measured about 1e-7, bound 1e-5.
// Mixed precision: ||sharded - single|| / ||single||. Each rank rounds its gradient to 16 bits
// before the sum and the sum is rounded again, where one process rounds the whole gradient once:
// up to two roundings of the gradient per step (unit roundoff u: bf16 2^-9, f16 2^-12). Adam
// passes a relative gradient error of a few u to the parameters' updates (more for elements
// whose gradient is near zero, whose update direction it can flip), over 10 steps adding up to
// about 20u, and the compared parameters are themselves rounded to 16 bits (u). Bound: 32u per
// tensor, bf16 6.3e-2, f16 7.8e-3; measured up to 2.6e-2 and 4.6e-4 (printed). The max-element
// measure is no use here: single elements near zero differ by a few learning rates.
double single_process_bound(Dtype d) {
  switch (d) {
    case Dtype::kF32: return 1e-5;
    case Dtype::kBf16: return 32 * 0x1p-9;
    default: return 32 * 0x1p-12;
  }
}

double difference_to_single(const MlpRun& run, const std::vector<float>& sharded, const std::vector<float>& single) {
  return testing::worst_tensor_difference(Mlp(run.shape).units(), sharded, single, run.dtype != Dtype::kF32);
}

// Stages 0-3 give bit-identical parameters after 10 AdamW steps at a fixed world size, and
// every rank holds the same parameters and the same loss.
TEST_P(StageEquivalence, BitIdenticalAcrossStages) {
  MlpRun run = base();
  const int n = world();
  std::vector<float> stage0;
  std::vector<float> scales0;
  for (int stage = 0; stage <= 3; ++stage) {
    run.stage = stage;
    auto ranks = run_threads(run, n);
    for (int r = 1; r < n; ++r) ASSERT_TRUE(same_bits(ranks[r].params, ranks[0].params)) << "stage " << stage << " rank " << r;
    if (stage == 0) {
      stage0 = ranks[0].params;
      scales0 = ranks[0].loss_scales;
      // The model learns: the loss after 10 steps is below the first step's.
      EXPECT_LT(ranks[0].losses.back(), ranks[0].losses.front());
    } else {
      EXPECT_TRUE(same_bits(ranks[0].params, stage0)) << "stage " << stage << " differs from stage 0 at N=" << n;
      EXPECT_EQ(ranks[0].loss_scales, scales0) << "stage " << stage;
    }
  }
}

TEST_P(StageEquivalence, MatchesSingleProcessWithinTolerance) {
  MlpRun run = base();
  const int n = world();
  const auto single = run_single(run)[0].params;
  for (int stage = 0; stage <= 3; stage += 3) {
    run.stage = stage;
    const auto sharded = run_threads(run, n)[0].params;
    ASSERT_EQ(single.size(), sharded.size());
    const double worst = difference_to_single(run, sharded, single);
    EXPECT_LE(worst, single_process_bound(run.dtype)) << "N=" << n << ", stage " << stage;
    std::printf("[ measured ] N=%d %s stage %d: relative difference to one process %.3g (bound %.3g)\n", n,
                testing::dtype_name(run.dtype), stage, worst, single_process_bound(run.dtype));
  }
}

// Gradient accumulation: stages 0 and 1 add the micro-batches' gradients locally and reduce
// once; stages 2 and 3 reduce every micro-batch and add the reduced slices. Within each pair the
// weights are bit-identical; across pairs (and against one process taking the whole global
// batch at once) only the summation order (and, in mixed precision, the roundings) differ.
TEST_P(StageEquivalence, GradientAccumulation) {
  MlpRun run = base();
  const int n = world();
  run.global_batch = 24;
  const auto single = run_single(run)[0].params;  // one micro-batch of 24 rows
  run.micro_batches = 2;
  std::vector<std::vector<float>> by_stage;
  for (int stage = 0; stage <= 3; ++stage) {
    run.stage = stage;
    by_stage.push_back(run_threads(run, n)[0].params);
  }
  EXPECT_TRUE(same_bits(by_stage[0], by_stage[1]));
  EXPECT_TRUE(same_bits(by_stage[2], by_stage[3]));
  for (const auto& params : by_stage) EXPECT_LE(difference_to_single(run, params, single), single_process_bound(run.dtype));
}

// Gradient clipping uses the global norm over all shards: it equals the unsharded norm (one
// process; in mixed precision within the rounding of the 16-bit gradients), and is the same,
// bit for bit, in every stage.
TEST_P(StageEquivalence, ClippingUsesTheGlobalNorm) {
  MlpRun run = base();
  const int n = world();
  run.clipping = 0.05f;  // below the gradient norms of this run, so every step clips
  const auto single = run_single(run)[0];
  std::vector<float> stage0;
  for (int stage = 0; stage <= 3; ++stage) {
    run.stage = stage;
    const auto ranks = run_threads(run, n);
    for (std::size_t s = 0; s < single.grad_norms.size(); ++s) {
      if (single.skipped[s]) continue;
      EXPECT_GT(single.grad_norms[s], run.clipping);
      EXPECT_NEAR(ranks[0].grad_norms[s], single.grad_norms[s], single_process_bound(run.dtype) * single.grad_norms[s]) << "step " << s;
    }
    if (stage == 0) stage0 = ranks[0].params;
    EXPECT_TRUE(same_bits(ranks[0].params, stage0)) << "stage " << stage;
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, StageEquivalence,
                         ::testing::Combine(::testing::Values(2, 3, 4), ::testing::Bool(), ::testing::Values("cpu", "strict"),
                                            ::testing::Values(Dtype::kF32, Dtype::kBf16, Dtype::kF16)),
                         [](const auto& p) {
                           return "N" + std::to_string(std::get<0>(p.param)) + (std::get<1>(p.param) ? "_tied_" : "_") +
                                  std::get<2>(p.param) + "_" + testing::dtype_name(std::get<3>(p.param));
                         });

// Buckets of a few elements (gloo's setMaxSegmentSize trick) make the test MLP's units reduce and
// gather in many pieces: every stage, with and without offload, still gives the bits of the
// unbucketed run; the collectives issued are the same, only their pieces multiply; and the
// communication scratch is bounded by the bucket, not the unit.
TEST(Buckets, AFewElementsChangeNoBitsAndBoundTheScratch) {
  for (Dtype dtype : {Dtype::kF32, Dtype::kBf16})
  for (int n : {2, 3})
    for (int stage = 0; stage <= 3; ++stage)
      for (int offload = 0; offload <= (stage == 0 ? 0 : stage == 3 ? 2 : 1); ++offload) {
        MlpRun run;
        run.dtype = dtype;
        run.steps = 3;
        run.micro_batches = 2;
        run.global_batch = 24;
        run.shape = tied_shape();
        run.stage = stage;
        run.offload.optimizer = offload >= 1;
        run.offload.params = offload == 2;
        const RankResult whole = run_threads(run, n)[0];
        for (std::size_t bucket : {1, 3, 13, 64}) {
          run.reduce_bucket = bucket;
          run.gather_bucket = bucket + 1;
          const RankResult pieces = run_threads(run, n)[0];
          const std::string what = std::string(dtype_label(dtype)) + " N=" + std::to_string(n) + " stage " + std::to_string(stage) + " offload " +
                                   std::to_string(offload) + " bucket " + std::to_string(bucket);
          EXPECT_TRUE(same_bits(pieces.params, whole.params)) << what;
          EXPECT_EQ(pieces.step_traffic.calls, whole.step_traffic.calls) << what;
          EXPECT_EQ(pieces.step_traffic.sent, whole.step_traffic.sent) << what;
          std::uint64_t whole_pieces = 0, bucket_pieces = 0;
          for (int c = 0; c < kNumCollectives; ++c) {
            whole_pieces += whole.step_traffic.pieces[c];
            bucket_pieces += pieces.step_traffic.pieces[c];
          }
          if (bucket < 16) { EXPECT_GT(bucket_pieces, whole_pieces) << what; }
          // threads backend: packing scratch of one piece, N * (bucket / N) elements at most
          const std::uint64_t bound = 4 * std::max<std::size_t>(bucket + 1, static_cast<std::size_t>(n));
          EXPECT_LE(pieces.device.peak[static_cast<int>(Category::kCommBuffers)],
                    whole.device.peak[static_cast<int>(Category::kCommBuffers)] + bound) << what;
        }
      }
}

// overlap_comm off: every reduction waited for where it is issued; the same bits and traffic.
TEST(OverlapComm, OffChangesNoBits) {
  for (int n : {2, 3})
    for (int stage = 0; stage <= 3; ++stage)
      for (int offload = 0; offload <= (stage == 0 ? 0 : 1); ++offload) {
        MlpRun run;
        run.steps = 3;
        run.micro_batches = 2;
        run.global_batch = 24;
        run.shape = tied_shape();
        run.stage = stage;
        run.offload.optimizer = offload == 1;
        const RankResult on = run_threads(run, n)[0];
        run.overlap_comm = false;
        const RankResult off = run_threads(run, n)[0];
        const std::string what = "N=" + std::to_string(n) + " stage " + std::to_string(stage) + " offload " + std::to_string(offload);
        EXPECT_TRUE(same_bits(on.params, off.params)) << what;
        EXPECT_EQ(on.step_traffic.sent, off.step_traffic.sent) << what;
      }
}

// Stage 3's schedule settings move memory and traffic, never bits: every setting, with and
// without offload and with gradient accumulation, gives the default schedule's weights, and each
// has the effect it exists for, in the ledger and the counters.
// An evaluation is a forward alone: what the reuse distance (or a prefetch into backward) made
// whole for a backward that never comes is freed when it ends, not left whole until the next step.
TEST(Stage3Schedule, AnEvaluationLeavesNothingWhole) {
  const MlpShape shape = tied_shape();
  for (const Stage3Options& o : {Stage3Options{-1, 1'000'000'000, 0, 1'000'000'000}, Stage3Options{1'000'000'000, 1'000'000'000, 0, 0}}) {
    Ledger ledger;
    auto comm = make_communicator("self", {std::chrono::seconds(60), &ledger});
    Mlp mlp(shape);
    EngineConfig c;
    c.stage = 3;
    c.stage3 = o;
    Engine engine(c, mlp, *comm, ledger);
    mlp.set_batch(mlp_synthetic_batch(shape, 7, 1, 0, 1));
    engine.evaluate();
    EXPECT_GT(ledger.peak(Tier::kDevice, Category::kGatheredParameters), 0u);
    EXPECT_EQ(ledger.current(Tier::kDevice, Category::kGatheredParameters), 0u)
        << "prefetch " << o.prefetch_bucket << " reuse " << o.max_reuse_distance;
  }
}

TEST(Stage3Schedule, SettingsChangeNoBitsAndMoveBytesAsTheySay) {
  for (int n : {2, 3})
    for (int offload = 0; offload <= 2; ++offload) {
      MlpRun run;
      run.steps = 3;
      run.micro_batches = 2;
      run.global_batch = 24;
      run.shape = tied_shape();
      run.stage = 3;
      run.offload.optimizer = offload >= 1;
      run.offload.params = offload == 2;
      const RankResult base = run_threads(run, n)[0];
      const FlatLayout layout(Mlp(run.shape).units(), n);
      const std::uint64_t per = (n - 1) * sizeof(float);
      const auto gathered = [](const RankResult& r) { return r.device.peak[static_cast<int>(Category::kGatheredParameters)]; };
      const auto gather_sent = [](const RankResult& r) { return r.step_traffic.sent[static_cast<int>(Collective::kAllGather)]; };
      const std::string at = "N=" + std::to_string(n) + " offload " + std::to_string(offload);
      // Every unit's slices, and the default's gathers: every use of every unit, forward and backward.
      std::uint64_t all_slices = 0, every_use = 0;
      for (int u = 0; u < layout.num_units(); ++u) {
        all_slices += layout.unit(u).slice;
        for (int v : layout.units_read_by(u)) every_use += 2 * layout.unit(v).slice;
      }
      EXPECT_EQ(gather_sent(base), run.micro_batches * every_use * per) << at;

      struct Case {
        const char* name;
        Stage3Options o;
      };
      const std::int64_t largest = static_cast<std::int64_t>(layout.largest_unit());
      const std::int64_t smallest_whole = static_cast<std::int64_t>(layout.unit(0).numel);  // the embedding (and the head's bias)
      const Case cases[] = {
          {"no prefetch", {0, 1'000'000'000, 0, 0}},
          {"prefetch everything", {1'000'000'000, 1'000'000'000, 0, 0}},
          {"prefetch everything, live cap of one unit", {1'000'000'000, largest, 0, 0}},
          {"small units persistent", {-1, 1'000'000'000, smallest_whole + 1, 0}},
          {"reuse everything", {-1, 1'000'000'000, 0, 1'000'000'000}},
          {"all of it", {largest, 2 * largest, smallest_whole + 1, 1'000'000'000}},
      };
      for (const Case& c : cases) {
        run.stage3 = c.o;
        const RankResult r = run_threads(run, n)[0];
        const std::string what = at + " " + c.name;
        EXPECT_TRUE(same_bits(r.params, base.params)) << what;
        const std::string name = c.name;
        if (name == "no prefetch") { EXPECT_LE(gathered(r), gathered(base)) << what; }
        if (name == "prefetch everything") {
          EXPECT_GT(gathered(r), gathered(base)) << what;
          EXPECT_EQ(gather_sent(r), gather_sent(base)) << what;  // the same gathers, earlier
        }
        if (name == "prefetch everything, live cap of one unit") {
          const std::uint64_t in_use = 2 * static_cast<std::uint64_t>(largest) * sizeof(float);  // a unit and its borrow
          EXPECT_LE(gathered(r), static_cast<std::uint64_t>(largest) * sizeof(float) + in_use) << what;
        }
        if (name == "small units persistent") {
          // A unit below the threshold is gathered once per step instead of at each of its uses,
          // and is whole for the run (parameters), never among the gathered units.
          std::uint64_t persistent_uses = 0, persistent_slices = 0, persistent_padded = 0;
          for (int u = 0; u < layout.num_units(); ++u) {
            if (static_cast<std::int64_t>(layout.unit(u).numel) < c.o.persistence_threshold) {
              persistent_slices += layout.unit(u).slice;
              persistent_padded += layout.unit(u).padded;
            }
            for (int v : layout.units_read_by(u))
              if (static_cast<std::int64_t>(layout.unit(v).numel) < c.o.persistence_threshold) persistent_uses += 2 * layout.unit(v).slice;
          }
          EXPECT_GT(persistent_slices, 0u) << what;
          EXPECT_EQ(gather_sent(r), (run.micro_batches * (every_use - persistent_uses) + persistent_slices) * per) << what;
          EXPECT_EQ(r.device.peak[static_cast<int>(Category::kParameters)],
                    base.device.peak[static_cast<int>(Category::kParameters)] + persistent_padded * sizeof(float))
              << what;
        }
        if (name == "reuse everything") {
          // Each unit gathered once per micro-batch, whole from its forward to its backward.
          EXPECT_EQ(gather_sent(r), run.micro_batches * all_slices * per) << what;
          EXPECT_GE(gathered(r), layout.padded_numel() * sizeof(float)) << what;
        }
      }
    }
}

// The models: the GPT, with its tied embedding (the head borrows unit 0), and the LLaMA untied
// and tied: stages 0-3 and offload (stage 2 + optimizer, stage 3 + optimizer + parameters)
// bit-identical at a fixed world size, with gradient clipping on.
TEST(ModelStages, BitIdenticalAcrossStagesAndOffload) {
  struct Placement { int stage; bool opt, param; };
  const Placement placements[] = {{0, false, false}, {1, false, false}, {2, false, false}, {3, false, false},
                                  {2, true, false},  {3, true, true}};
  const std::optional<LlamaShape> models[] = {std::nullopt, testing::tiny_llama(false), testing::tiny_llama(true)};
  for (const std::optional<LlamaShape>& model : models)
  for (Dtype dtype : {Dtype::kF32, Dtype::kBf16, Dtype::kF16})
  for (int n : {2, 3, 4}) {
    testing::GptRun run;
    run.llama = model;
    run.dtype = dtype;
    if (n == 4) run.device = "strict";
    std::vector<float> stage0;
    for (const Placement& p : placements) {
      run.stage = p.stage, run.offload_optimizer = p.opt, run.offload_params = p.param;
      const std::vector<std::vector<float>> params = testing::train_gpt_threads(run, n);
      const std::string what = cat(run.model_label(), " ", dtype_label(dtype), " N=", n, " stage ", p.stage,
                                   p.opt ? "+opt" : "", p.param ? "+param" : "");
      for (int r = 1; r < n; ++r) ASSERT_TRUE(same_bits(params[r], params[0])) << what << " rank " << r;
      if (p.stage == 0) stage0 = params[0];
      EXPECT_TRUE(same_bits(params[0], stage0)) << what << " differs from stage 0";
    }
    testing::GptRun untrained = run;
    untrained.steps = 0;
    EXPECT_FALSE(same_bits(testing::train_gpt_threads(untrained, n)[0], stage0)) << run.model_label() << ": training moved nothing";
  }
}

class StageMemory : public ::testing::TestWithParam<std::tuple<int, Dtype>> {};

std::uint64_t model_state(const TierUsage& u) {
  return u.current[static_cast<int>(Category::kParameters)] + u.current[static_cast<int>(Category::kGradients)] +
         u.current[static_cast<int>(Category::kOptimizerState)];
}

// Per-rank model-state bytes read from the ledger after a step, against the paper's formulas:
// f32 (4 + 4 + 8 bytes per parameter) 16Ψ, 8Ψ + 8Ψ/N, 4Ψ + 12Ψ/N, 16Ψ/N; mixed precision (2 + 2
// + 12: 16-bit parameters and gradients, f32 master, m and v) 16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N,
// 16Ψ/N. The only slack allowed is the padding (at most N-1 elements per unit, 16 bytes each).
TEST_P(StageMemory, LedgerMatchesPaperFormulas) {
  const auto [n, dtype] = GetParam();
  MlpRun run;
  run.steps = 2;
  run.dtype = dtype;
  const bool mixed = dtype != Dtype::kF32;
  const double b = static_cast<double>(dtype_bytes(dtype));  // bytes of a parameter and of a gradient
  for (int stage = 0; stage <= 3; ++stage) {
    run.stage = stage;
    auto ranks = run_threads(run, n);
    const double psi = static_cast<double>(ranks[0].numel);
    const double formula[] = {16 * psi, mixed ? 4 * psi + 12 * psi / n : 8 * psi + 8 * psi / n,
                              mixed ? 2 * psi + 14 * psi / n : 4 * psi + 12 * psi / n, 16 * psi / n};
    const double slack = 16.0 * (n - 1) * ranks[0].units;
    for (int r = 0; r < n; ++r) {
      const double measured = static_cast<double>(model_state(ranks[r].device));
      EXPECT_GE(measured, formula[stage] - slack) << "stage " << stage << " rank " << r;
      EXPECT_LE(measured, formula[stage] + slack) << "stage " << stage << " rank " << r;
    }
    const TierUsage& d = ranks[0].device;
    const double k = static_cast<double>(d.current[static_cast<int>(Category::kOptimizerState)]) / (stage == 0 ? psi : psi / n);
    EXPECT_NEAR(k, mixed ? 12.0 : 8.0, 16.0 * (n - 1) * ranks[0].units / psi * n) << "optimizer bytes per parameter, stage " << stage;
    const auto gathered_peak = d.peak[static_cast<int>(Category::kGatheredParameters)];
    const auto two_largest = static_cast<std::uint64_t>(b) * (ranks[0].largest_unit + ranks[0].second_unit);
    if (stage == 3) {
      EXPECT_GT(gathered_peak, 0u);
      EXPECT_LE(gathered_peak, two_largest) << "stage 3 kept more than two units whole";
      EXPECT_EQ(d.current[static_cast<int>(Category::kGatheredParameters)], 0u) << "gathered units leaked";
    } else {
      EXPECT_EQ(gathered_peak, 0u);
    }
    if (stage >= 2) {  // whole unit gradients live only while reduced: at most two at a time
      const auto grad_peak = d.peak[static_cast<int>(Category::kGradients)];
      const auto shard = static_cast<std::uint64_t>(b) * ranks[0].padded / n;
      EXPECT_LE(grad_peak, shard + two_largest);
      EXPECT_EQ(d.current[static_cast<int>(Category::kGradients)], shard);
    }
  }
}

// Bytes sent per rank per step: 2Ψ(N-1)/N elements for stages 0-2, 3Ψ(N-1)/N for stage 3, of 4
// bytes in f32 and 2 in mixed precision (16-bit collectives: half the bytes on the wire).
// fp16 adds the overflow vote: one byte to each of the N-1 others.
TEST_P(StageMemory, TrafficMatchesPaperFormulas) {
  const auto [n, dtype] = GetParam();
  MlpRun run;
  run.steps = 2;
  run.dtype = dtype;
  const double b = static_cast<double>(dtype_bytes(dtype));
  const double vote = dtype == Dtype::kF16 ? n - 1 : 0;
  for (int stage = 0; stage <= 3; ++stage) {
    run.stage = stage;
    auto ranks = run_threads(run, n);
    const double psi = static_cast<double>(ranks[0].numel);
    const double passes = stage == 3 ? 3.0 : 2.0;
    const double formula = passes * psi * (n - 1) / n * b;
    const double exact = passes * static_cast<double>(ranks[0].padded) * (n - 1) / n * b;  // with padding
    const double slack = passes * b * (n - 1) * ranks[0].units;
    for (int r = 0; r < n; ++r) {
      const Traffic& t = ranks[r].step_traffic;
      EXPECT_EQ(static_cast<double>(t.total_sent()), exact + vote) << "stage " << stage << " rank " << r;
      EXPECT_NEAR(static_cast<double>(t.total_sent()), formula + vote, slack);
      EXPECT_EQ(t.total_sent(), t.total_received());
      const auto rs = t.sent[static_cast<int>(Collective::kReduceScatter)];
      const auto ag = t.sent[static_cast<int>(Collective::kAllGather)] - static_cast<std::uint64_t>(vote);
      const auto ar = t.sent[static_cast<int>(Collective::kAllReduce)];
      if (stage == 0) {
        EXPECT_EQ(rs + ag, 0u);
        EXPECT_GT(ar, 0u);
      } else {
        EXPECT_EQ(ar, 0u);
        EXPECT_EQ(ag, (stage == 3 ? 2 : 1) * rs) << "stage " << stage;
      }
    }
  }
}

// 16-bit collectives halve the bytes on the wire: the same run in bf16 sends exactly half of
// what it sends in f32, in every stage and collective, with the same number of collectives.
TEST(StageTraffic, SixteenBitCollectivesHalveTheBytes) {
  for (int n : {2, 4})
    for (int stage = 0; stage <= 3; ++stage) {
      MlpRun run;
      run.steps = 2;
      run.stage = stage;
      const Traffic f32 = run_threads(run, n)[0].step_traffic;
      run.dtype = Dtype::kBf16;
      const Traffic bf16 = run_threads(run, n)[0].step_traffic;
      for (int c = 0; c < kNumCollectives; ++c) {
        EXPECT_EQ(2 * bf16.sent[c], f32.sent[c]) << collective_name(static_cast<Collective>(c)) << " stage " << stage;
        EXPECT_EQ(bf16.calls[c], f32.calls[c]);
      }
      EXPECT_GT(f32.total_sent(), 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(Worlds, StageMemory,
                         ::testing::Combine(::testing::Values(2, 3, 4), ::testing::Values(Dtype::kF32, Dtype::kBf16, Dtype::kF16)),
                         [](const auto& p) {
                           return "N" + std::to_string(std::get<0>(p.param)) + "_" + testing::dtype_name(std::get<1>(p.param));
                         });

// ---- bad input: a clear error on every rank, never a hang ----

template <typename Fn>
std::vector<std::string> errors_on_each_rank(int n, Fn fn) {
  ThreadWorld world(n, {std::chrono::seconds(10), nullptr});
  std::vector<std::string> errors(n);
  try {
    world.run([&](int r) {
      try {
        fn(r, world);
      } catch (const ConfigError& e) {
        errors[r] = e.what();
        throw;
      }
    });
  } catch (const ConfigError&) {
  }
  return errors;
}

TEST(EngineErrors, StageOutsideZeroToThree) {
  for (int stage : {-1, 4, 5}) {
    auto errors = errors_on_each_rank(2, [&](int r, ThreadWorld& world) {
      MlpRun run;
      run.stage = stage;
      Ledger ledger;
      auto comm = world.communicator(r, &ledger);
      testing::train_mlp(run, *comm, ledger);
    });
    for (const auto& e : errors) EXPECT_NE(e.find("[engine] zero_optimization.stage is " + std::to_string(stage) + "; ZeRO stages are 0-3"), std::string::npos) << e;
  }
}

TEST(EngineErrors, WorldLargerThanAUnit) {
  auto errors = errors_on_each_rank(4, [](int r, ThreadWorld& world) {
    MlpRun run;
    run.shape.widths = {3, 5, 1};  // layer1 has 5 + 1 = 6 parameters... layer 'layer1' bias has 1
    run.shape.widths = {1, 1, 1};  // layer0: w 1 + b 1 = 2 parameters < 4 ranks
    Ledger ledger;
    auto comm = world.communicator(r, &ledger);
    testing::train_mlp(run, *comm, ledger);
  });
  for (const auto& e : errors) EXPECT_NE(e.find("fewer than the 4 ranks"), std::string::npos) << e;
}

TEST(EngineErrors, RanksDisagreeOnTheModel) {
  auto errors = errors_on_each_rank(3, [](int r, ThreadWorld& world) {
    MlpRun run;
    if (r == 2) run.shape.widths = {13, 31, 30, 7};
    Ledger ledger;
    auto comm = world.communicator(r, &ledger);
    testing::train_mlp(run, *comm, ledger);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(errors[r].find("the ranks disagree on the model"), std::string::npos) << "rank " << r << ": " << errors[r];
    EXPECT_NE(errors[r].find("rank 2 has"), std::string::npos) << errors[r];
  }
}

TEST(EngineErrors, MicroBatchProtocol) {
  MlpRun run;
  Ledger ledger;
  auto comm = make_communicator("self");
  Mlp mlp(run.shape);
  Engine engine(testing::engine_config(run), mlp, *comm, ledger);
  mlp.set_batch(mlp_synthetic_batch(run.shape, 1, 0, 0, 4));
  engine.forward_backward(false);
  EXPECT_THROW(engine.step(), ConfigError) << "step() before the last micro-batch";
  engine.forward_backward(true);
  EXPECT_THROW(engine.forward_backward(false), ConfigError) << "a micro-batch after the last one";
  engine.step();
  engine.train_step();  // the engine is still usable
}

class EmptyUnitModel final : public Module {
 public:
  std::vector<UnitSpec> units() const override {
    return {{"a", {{"a.w", {4}, Init::ones(), true}}, {}}, {"empty", {}, {}}};
  }
  void forward(int, const UnitViews&) override {}
  void backward(int, const UnitViews&) override {}
  float loss() const override { return 0; }
};

TEST(EngineErrors, UnitWithoutParameters) {
  Ledger ledger;
  auto comm = make_communicator("self");
  EmptyUnitModel model;
  try {
    const EngineConfig defaults;  // named: GCC 12 warns (falsely) of a temporary's uninitialised strings
    Engine engine(defaults, model, *comm, ledger);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'empty') declares no parameters"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ledger.usage(Tier::kDevice).total_peak, 0u) << "nothing is allocated before the checks pass";
}

// A model that reads a unit it did not declare gets an error, not another unit's memory.
class UndeclaredReadModel final : public Module {
 public:
  std::vector<UnitSpec> units() const override {
    return {{"a", {{"a.w", {8}, Init::ones(), true}}, {}}, {"b", {{"b.w", {8}, Init::ones(), true}}, {}}};
  }
  void forward(int u, const UnitViews& v) override {
    if (u == 1) v.param(0, 0);
  }
  void backward(int, const UnitViews&) override {}
  float loss() const override { return 0; }
};

TEST(EngineErrors, ReadingAnUndeclaredUnit) {
  Ledger ledger;
  auto comm = make_communicator("self");
  UndeclaredReadModel model;
  EngineConfig config;
  config.stage = 3;
  Engine engine(config, model, *comm, ledger);
  EXPECT_THROW(engine.train_step(), ConfigError);
}

}  // namespace
}  // namespace zero
