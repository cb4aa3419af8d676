// The planner: the ZeRO paper's Table 1, the stage formulas, the named shapes, predictions equal
// to what the engine's ledger and traffic counters measure (thread ranks), the advisor's
// choices, the JSON, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "comm/thread_world.h"
#include "common/error.h"
#include "common/trace.h"
#include "engine/mlp_run.h"
#include "model/gpt.h"
#include "planner/byte_size.h"
#include "planner/report.h"

namespace zero {
namespace {

PlanInput counts_input(double psi, int ranks, int stage, DtypeMode dtype) {
  PlanInput in;
  const auto p = static_cast<std::int64_t>(psi);
  in.model = describe_counts(p, std::max<std::int64_t>(1, p / 100));  // 100 units: each pads by < 1024
  in.ranks = in.ranks_per_node = ranks;
  in.dtype = dtype;
  in.zero.stage = stage;
  return in;
}

// ---- the ZeRO paper, Table 1 ----
// Per-device memory of model states (GB = 10^9 bytes) for mixed-precision Adam (K = 12):
// columns P_os, P_os+g, P_os+g+p, for 7.5B, 128B and 1T parameters, N_d = 1 .. 1024.
// Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
// arXiv:1910.02054, Table 1 (values as printed). The baseline (16Ψ: 120, 2048, 16000 GB) is the
// N_d = 1 row and Figure 1's "Baseline". The table prints the 7.5B column rounded (41.25 -> 41.3,
// 1.875 -> 1.88) and the 128B and 1T columns truncated (513.5 -> 513, 4187.5 -> 4187,
// 2218.75 -> 2218, 15.625 -> 15.6): each value is compared under its column's rule, to the
// decimals printed.
struct Table1Row {
  int nd;
  const char* cells[3][3];  // [model][P_os, P_os+g, P_os+g+p]
};
const Table1Row kTable1[] = {
    {1, {{"120", "120", "120"}, {"2048", "2048", "2048"}, {"16000", "16000", "16000"}}},
    {4, {{"52.5", "41.3", "30"}, {"896", "704", "512"}, {"7000", "5500", "4000"}}},
    {16, {{"35.6", "21.6", "7.5"}, {"608", "368", "128"}, {"4750", "2875", "1000"}}},
    {64, {{"31.4", "16.6", "1.88"}, {"536", "284", "32"}, {"4187", "2218", "250"}}},
    {256, {{"30.4", "15.4", "0.47"}, {"518", "263", "8"}, {"4046", "2054", "62.5"}}},
    {1024, {{"30.1", "15.1", "0.12"}, {"513", "257", "2"}, {"4011", "2013", "15.6"}}},
};
const double kTable1Psi[] = {7.5e9, 128e9, 1e12};
const char* kTable1Baseline[] = {"120", "2048", "16000"};

int decimals(const std::string& printed) {
  const auto dot = printed.find('.');
  return dot == std::string::npos ? 0 : static_cast<int>(printed.size() - dot - 1);
}

// `value` as the paper prints it: rounded half up (7.5B) or truncated (128B, 1T) to the decimals shown.
double as_printed(double value, const std::string& printed, bool truncate) {
  const double scale = std::pow(10.0, decimals(printed));
  const double scaled = value * scale;
  return (truncate ? std::floor(scaled + 1e-9) : std::floor(scaled + 0.5)) / scale;
}

TEST(Table1, PlannerModelStatesReproduceTheZeroPaper) {
  for (int m = 0; m < 3; ++m) {
    for (const Table1Row& row : kTable1) {
      for (int stage = 0; stage <= 3; ++stage) {
        const Plan p = plan(counts_input(kTable1Psi[m], row.nd, stage, DtypeMode::kMixed));
        const double gb = static_cast<double>(p.persistent_device.model_states()) / 1e9;
        const std::string printed = stage == 0 ? kTable1Baseline[m] : row.cells[m][stage - 1];
        EXPECT_DOUBLE_EQ(as_printed(gb, printed, m > 0), std::stod(printed))
            << "Ψ=" << kTable1Psi[m] << " N_d=" << row.nd << " stage " << stage << ": planner " << gb << " GB";
      }
    }
  }
}

// ---- the stage formulas, with the engine's padding ----
TEST(Formulas, PersistentModelStatesPerStageAndDtype) {
  for (int n : {1, 3, 8}) {
    for (DtypeMode d : {DtypeMode::kFp32, DtypeMode::kMixed}) {
      const bool fp32 = d == DtypeMode::kFp32;
      for (int stage = 0; stage <= 3; ++stage) {
        const Plan p = plan(counts_input(1'000'003, n, stage, d));
        const std::uint64_t P = p.padded_numel, S = p.shard_numel;
        ASSERT_EQ(P, S * n);
        const std::uint64_t expected[] = {16 * P, fp32 ? 8 * P + 8 * S : 4 * P + 12 * S,
                                          fp32 ? 4 * P + 12 * S : 2 * P + 14 * S, 16 * S};
        EXPECT_EQ(p.persistent_device.model_states(), expected[stage]) << "stage " << stage << " N=" << n;
        EXPECT_EQ(p.host.total(), 0u);
      }
    }
  }
}

TEST(Formulas, TrafficIsTwoPsiOrThreePsiPlusTiedGathers) {
  const int n = 4;
  PlanInput in;
  in.model = named_model("gpt2");
  in.ranks = in.ranks_per_node = n;
  for (int stage = 0; stage <= 3; ++stage) {
    in.zero.stage = stage;
    const Plan p = plan(in);
    const std::uint64_t P = p.padded_numel;
    const FlatLayout layout(in.model.units, n);
    const std::uint64_t embedding = layout.unit(0).padded;
    // Stage 3 gathers the embedding once more in forward and once more in backward for the tied head.
    const std::uint64_t elements = stage < 3 ? 2 * P * (n - 1) / n : (3 * P + 2 * embedding) * (n - 1) / n;
    EXPECT_EQ(p.traffic.total(), elements * 4) << "stage " << stage;
  }
}

// ---- named shapes: the public parameter counts ----
TEST(NamedShapes, ParameterCountsMatchThePublishedFigures) {
  const std::pair<const char*, std::int64_t> known[] = {
      {"gpt2", 124'439'808},           {"gpt2-medium", 354'823'168},   {"gpt2-large", 774'030'080},
      {"gpt2-xl", 1'557'611'200},      {"llama2-7b", 6'738'415'616},   {"llama2-13b", 13'015'864'320},
      {"llama-33b", 32'528'943'616},   {"llama2-70b", 68'976'648'192}, {"llama3-8b", 8'030'261'248},
      {"llama3-70b", 70'553'706'496},
  };
  ASSERT_EQ(named_model_names().size(), std::size(known));
  for (const auto& [name, count] : known) {
    const ModelDescription m = named_model(name);
    EXPECT_EQ(m.num_parameters(), count) << name;
    if (m.gpt) {
      EXPECT_EQ(m.gpt->num_parameters(), count) << name;
    }
    EXPECT_NE(m.source.find(" parameters"), std::string::npos) << m.source;
  }
  const LlamaShape l{32000, 4096, 4096, 32, 32, 32, 11008};
  EXPECT_EQ(l.num_parameters(), describe_llama(l).num_parameters());
  // The GPT head borrows the embedding (tied); the LLaMA head does not.
  EXPECT_EQ(named_model("gpt2").units.back().borrows, std::vector<int>{0});
  EXPECT_TRUE(named_model("llama2-7b").units.back().borrows.empty());
}

TEST(NamedShapes, CountsModelKeepsTheLargestUnit) {
  const ModelDescription m = describe_counts(1000, 300);
  EXPECT_EQ(m.num_parameters(), 1000);
  EXPECT_EQ(m.largest_unit(), 300);
  EXPECT_EQ(m.units.size(), 4u);  // 300, 234, 233, 233
}

// ---- the planner against the engine: predicted peak device bytes = the ledger's peak ----
struct Measured {
  std::uint64_t peak = 0;
  TierUsage usage;
  TierUsage host;
  Traffic traffic;
  // Host<->device copies of the last step, as the device counted them.
  std::uint64_t to_host = 0, to_device = 0;
};

// Runs two optimizer steps of the engine on N thread ranks; rank 0's ledger, traffic and copies
// of the second step.
template <typename MakeModel, typename SetBatch>
Measured measure(int n, int stage, int micro_batches, MakeModel make_model, SetBatch set_batch,
                 const OffloadOptions& offload = {}, std::size_t bucket = 0, const Stage3Options& stage3 = {},
                 bool overlap_comm = true, Dtype dtype = Dtype::kF32) {
  ThreadWorld world(n, {std::chrono::seconds(60), nullptr});
  std::vector<Measured> out(n);
  world.run([&](int r) {
    Ledger ledger;
    auto comm = world.communicator(r, &ledger);
    auto model = make_model(ledger);
    EngineConfig c;
    c.stage = stage;
    c.offload = offload;
    c.reduce_bucket_elements = c.allgather_bucket_elements = bucket;
    c.stage3 = stage3;
    c.overlap_comm = overlap_comm;
    c.precision.compute = dtype;
    Engine engine(c, *model, *comm, ledger);
    for (int s = 0; s < 2; ++s) {
      // Every copy of step 1 has completed when step() returns (the delayed update's Adam may
      // still run, but it copies nothing until the next step's optimizer phase).
      for (int m = 0; m < micro_batches; ++m) {
        set_batch(*model, r * 100 + s * 10 + m);
        engine.forward_backward(m + 1 == micro_batches);
      }
      engine.step();
    }
    Measured& m = out[r];
    m.peak = ledger.usage(Tier::kDevice).total_peak;
    m.usage = ledger.usage(Tier::kDevice);
    m.host = ledger.usage(Tier::kHost);
    m.traffic = engine.last_step_traffic();
    m.to_host = engine.last_step_to_host();
    m.to_device = engine.last_step_to_device();
  });
  return out[0];
}

// `slack`: how far the prediction may exceed the ledger's peak (0: equal). The dry run reserves
// communication scratch from a collective's issue to its first wait, where a running comm thread
// holds it only while the collective runs (planner.h): with scratch, the prediction is the bound.
// Random tokens for a GPT's micro-batch, from a seed.
std::function<void(Gpt&, int)> gpt_random_batches(const GptShape& shape, int batch) {
  return [shape, batch](Gpt& gpt, int seed) {
    std::mt19937 rng(seed);
    std::vector<std::int32_t> in(batch * shape.seq_len), tgt(in.size());
    for (auto& t : in) t = static_cast<std::int32_t>(rng() % shape.vocab_size);
    for (auto& t : tgt) t = static_cast<std::int32_t>(rng() % shape.vocab_size);
    gpt.set_batch(in.data(), tgt.data());
  };
}

void expect_prediction(const PlanInput& in, const Measured& m, const std::string& what, std::uint64_t slack = 0) {
  const Plan p = plan(in);
  if (slack == 0) {
    EXPECT_EQ(p.device.total(), m.peak) << what << ": predicted " << p.device.total() << ", ledger " << m.peak;
  } else {
    EXPECT_GE(p.device.total(), m.peak) << what << ": predicted " << p.device.total() << ", ledger " << m.peak;
    EXPECT_LE(p.device.total(), m.peak + slack) << what << ": predicted " << p.device.total() << ", ledger " << m.peak;
  }
  for (int c = 0; c < kNumCollectives; ++c) {
    EXPECT_EQ(p.traffic.sent[c], m.traffic.sent[c]) << what << " " << collective_name(static_cast<Collective>(c));
    EXPECT_EQ(p.traffic.calls[c], m.traffic.calls[c]) << what << " " << collective_name(static_cast<Collective>(c));
  }
  for (int c = 0; c < kNumCategories; ++c) {  // host buffers live for the whole run: peak = now
    EXPECT_EQ(p.host.bytes[c], m.host.peak[c]) << what << " host " << category_name(static_cast<Category>(c));
  }
  EXPECT_EQ(p.device_to_host_bytes, m.to_host) << what << ": gradient slices to the host";
  EXPECT_EQ(p.host_to_device_bytes, m.to_device) << what << ": parameter slices to the device";
}

PlanInput threads_input(ModelDescription model, int n, int stage, int micro_batches) {
  PlanInput in;
  in.model = std::move(model);
  in.ranks = in.ranks_per_node = n;
  in.zero.stage = stage;
  in.gradient_accumulation_steps = micro_batches;
  in.comm_scratch = false;  // the threads backend has no reduce-scatter scratch
  return in;
}

// The offload configurations the engine runs, as the planner and the engine each spell them.
struct OffloadCase {
  ZeroSettings zero;
  OffloadOptions engine;
};
std::vector<OffloadCase> offload_cases() {
  std::vector<OffloadCase> cases;
  auto add = [&](int stage, bool param, bool delayed) {
    OffloadCase c;
    c.zero.stage = stage;
    c.zero.offload_optimizer = c.engine.optimizer = true;
    c.zero.offload_param = c.engine.params = param;
    c.zero.delayed_update = c.engine.delayed_update = delayed;  // from the first step (no warm-up)
    cases.push_back(c);
  };
  for (int stage = 1; stage <= 3; ++stage) add(stage, false, false);
  add(3, true, false);
  for (int stage = 1; stage <= 3; ++stage) add(stage, false, true);
  return cases;
}

// Stages 0-3 without offload, then every offload configuration.
std::vector<OffloadCase> every_configuration() {
  std::vector<OffloadCase> cases;
  for (int stage = 0; stage <= 3; ++stage) cases.push_back({ZeroSettings{stage}, OffloadOptions{}});
  for (const OffloadCase& oc : offload_cases()) cases.push_back(oc);
  return cases;
}

TEST(AgainstEngine, MlpPlainAndTiedEveryStage) {
  for (bool tied : {false, true}) {
    MlpShape shape = tied ? MlpShape{{9, 21, 17, 21, 9}, true} : MlpShape{};
    ModelDescription model{"mlp", "mlp", "", "", Mlp(shape).units(), std::nullopt};
    for (int n : {1, 2, 3, 4}) {
      for (int stage = 0; stage <= 3; ++stage) {
        for (int micro : {1, 3}) {
          const Measured m = measure(
              n, stage, micro, [&](Ledger&) { return std::make_unique<Mlp>(shape); },
              [&](Mlp& mlp, int seed) { mlp.set_batch(mlp_synthetic_batch(shape, 7, seed, 0, 2)); });
          expect_prediction(threads_input(model, n, stage, micro), m,
                            cat(tied ? "tied" : "plain", " MLP N=", n, " stage ", stage, " micro-batches ", micro));
        }
      }
    }
  }
}

// With and without activation checkpointing (cpu checkpointing's kept inputs in the host tier):
// the planner's activations are the GPT's, and its peak the ledger's, for several shapes and
// micro-batch sizes.
TEST(AgainstEngine, GptEveryStageActivationsIncluded) {
  const std::vector<std::pair<GptShape, int>> cases = {{{64, 16, 32, 2, 2}, 2}, {{48, 24, 24, 3, 3}, 3}};
  for (const auto& [shape, batch] : cases) {
    for (const GptCheckpointing ckpt : {GptCheckpointing{}, GptCheckpointing{true, false}, GptCheckpointing{true, true}}) {
      auto make = [&](Ledger& ledger) { return std::make_unique<Gpt>(shape, batch, ledger, ckpt); };
      const auto set_batch = gpt_random_batches(shape, batch);
      for (int n : {2, 4}) {
        for (int stage = 0; stage <= 3; ++stage) {
          for (int micro : {1, 2}) {
            const Measured m = measure(n, stage, micro, make, set_batch);
            PlanInput in = threads_input(describe_gpt(shape), n, stage, micro);
            in.micro_batch = batch;
            in.checkpointing = ckpt;
            expect_prediction(in, m, cat("GPT ", shape.describe(), " B=", batch, ckpt.enabled ? (ckpt.cpu ? " cpu-ckpt" : " ckpt") : "",
                                         " N=", n, " stage ", stage, " micro-batches ", micro));
            const Plan p = plan(in);
            EXPECT_EQ(p.device[Category::kActivations], Gpt::activation_bytes(shape, batch, ckpt).device);
            EXPECT_EQ(p.host[Category::kActivations], Gpt::activation_bytes(shape, batch, ckpt).host);
          }
        }
      }
    }
  }
}

// Offload, every configuration: device peak, host bytes by category, traffic and the bytes each
// step copies across the link, all exactly as the engine's ledger, counters and copies have them.
TEST(AgainstEngine, MlpPlainAndTiedEveryOffloadConfiguration) {
  for (bool tied : {false, true}) {
    MlpShape shape = tied ? MlpShape{{9, 21, 17, 21, 9}, true} : MlpShape{};
    ModelDescription model{"mlp", "mlp", "", "", Mlp(shape).units(), std::nullopt};
    for (int n : {1, 2, 4}) {
      for (const OffloadCase& oc : offload_cases()) {
        for (int micro : {1, 3}) {
          const Measured m = measure(
              n, oc.zero.stage, micro, [&](Ledger&) { return std::make_unique<Mlp>(shape); },
              [&](Mlp& mlp, int seed) { mlp.set_batch(mlp_synthetic_batch(shape, 7, seed, 0, 2)); }, oc.engine);
          PlanInput in = threads_input(model, n, oc.zero.stage, micro);
          in.zero = oc.zero;
          expect_prediction(in, m, cat(tied ? "tied" : "plain", " MLP N=", n, " ", plan_label(oc.zero), " micro-batches ", micro));
        }
      }
    }
  }
}

TEST(AgainstEngine, GptEveryOffloadConfigurationActivationsIncluded) {
  const GptShape shape{64, 16, 32, 2, 2};
  const int batch = 2;
  auto make = [&](Ledger& ledger) { return std::make_unique<Gpt>(shape, batch, ledger); };
  const auto set_batch = gpt_random_batches(shape, batch);
  for (int n : {1, 2, 4}) {
    for (const OffloadCase& oc : offload_cases()) {
      for (int micro : {1, 2}) {
        const Measured m = measure(n, oc.zero.stage, micro, make, set_batch, oc.engine);
        PlanInput in = threads_input(describe_gpt(shape), n, oc.zero.stage, micro);
        in.zero = oc.zero;
        in.micro_batch = batch;
        const std::string what = cat("GPT N=", n, " ", plan_label(oc.zero), " micro-batches ", micro);
        expect_prediction(in, m, what);
        const Plan p = plan(in);
        std::printf("[ measured ] %-34s device peak %7llu B (predicted %7llu), host %6llu B (%6llu), link %5llu B down "
                    "(%5llu), %5llu B up (%5llu)\n",
                    what.c_str(), static_cast<unsigned long long>(m.peak), static_cast<unsigned long long>(p.device.total()),
                    static_cast<unsigned long long>(m.host.total_peak), static_cast<unsigned long long>(p.host.total()),
                    static_cast<unsigned long long>(m.to_host), static_cast<unsigned long long>(p.device_to_host_bytes),
                    static_cast<unsigned long long>(m.to_device), static_cast<unsigned long long>(p.host_to_device_bytes));
      }
    }
  }
}

// Buckets of a few elements: every collective runs as many pieces with packing scratch. Traffic,
// host bytes and link bytes are still exact; the device peak is bounded by the prediction, and
// exceeds the ledger's by at most one collective's packing scratch.
TEST(AgainstEngine, SmallBucketsEveryStageAndOffloadConfiguration) {
  const MlpShape shape{{9, 21, 17, 21, 9}, true};
  ModelDescription model{"mlp", "mlp", "", "", Mlp(shape).units(), std::nullopt};
  const std::vector<OffloadCase> cases = every_configuration();
  int exact = 0, total = 0;
  for (int n : {2, 3}) {
    for (std::size_t bucket : {std::size_t{5}, std::size_t{64}}) {
      for (const OffloadCase& oc : cases) {
        for (int micro : {1, 2}) {
          const Measured m = measure(
              n, oc.zero.stage, micro, [&](Ledger&) { return std::make_unique<Mlp>(shape); },
              [&](Mlp& mlp, int seed) { mlp.set_batch(mlp_synthetic_batch(shape, 7, seed, 0, 2)); }, oc.engine, bucket);
          PlanInput in = threads_input(model, n, oc.zero.stage, micro);
          in.zero = oc.zero;
          in.zero.reduce_bucket_size = in.zero.allgather_bucket_size = static_cast<std::int64_t>(bucket);
          const std::uint64_t segment = std::max<std::uint64_t>(1, bucket / n), packing = n * segment * sizeof(float);
          const std::string what = cat("tied MLP N=", n, " bucket ", bucket, " ", plan_label(oc.zero), " micro-batches ", micro);
          expect_prediction(in, m, what, packing);
          exact += plan(in).device.total() == m.peak;
          ++total;
        }
      }
    }
  }
  std::printf("[ measured ] small buckets: prediction equal to the ledger's peak in %d of %d runs, above it by at most one "
              "collective's packing scratch in the rest\n", exact, total);
}

// Stage 3's schedule settings (prefetch bucket, live cap, persistence, reuse distance), with and
// without offload and with accumulation: the dry run predicts the ledger's peak, the traffic,
// the host bytes and the link bytes exactly, for the tied MLP and the GPT with its activations.
TEST(AgainstEngine, Stage3ScheduleSettingsEveryPlacement) {
  const MlpShape mlp{{9, 21, 17, 21, 9}, true};
  const GptShape gpt{64, 16, 32, 2, 2};
  const int batch = 2;
  const std::vector<Stage3Options> settings = {
      {0, 1'000'000'000, 0, 0}, {1'000'000'000, 1'000'000'000, 0, 0}, {1'000, 700, 0, 0}, {-1, 1'000'000'000, 250, 0},
      {-1, 1'000'000'000, 0, 1'000'000'000}, {600, 1'500, 250, 2'000}};
  for (int model = 0; model < 2; ++model) {
    for (int n : {2, 3}) {
      for (int offload = 0; offload <= 2; ++offload) {
        for (const Stage3Options& o : settings) {
          OffloadOptions engine_offload;
          engine_offload.optimizer = offload >= 1;
          engine_offload.params = offload == 2;
          const int micro = 2;
          Measured m;
          PlanInput in;
          if (model == 0) {
            m = measure(
                n, 3, micro, [&](Ledger&) { return std::make_unique<Mlp>(mlp); },
                [&](Mlp& x, int seed) { x.set_batch(mlp_synthetic_batch(mlp, 7, seed, 0, 2)); }, engine_offload, 0, o);
            in = threads_input(ModelDescription{"mlp", "mlp", "", "", Mlp(mlp).units(), std::nullopt}, n, 3, micro);
          } else {
            m = measure(n, 3, micro, [&](Ledger& l) { return std::make_unique<Gpt>(gpt, batch, l); }, gpt_random_batches(gpt, batch),
                        engine_offload, 0, o);
            in = threads_input(describe_gpt(gpt), n, 3, micro);
            in.micro_batch = batch;
          }
          in.zero.offload_optimizer = engine_offload.optimizer;
          in.zero.offload_param = engine_offload.params;
          in.zero.stage3_prefetch_bucket_size = o.prefetch_bucket;
          in.zero.stage3_max_live_parameters = o.max_live;
          in.zero.stage3_param_persistence_threshold = o.persistence_threshold;
          in.zero.stage3_max_reuse_distance = o.max_reuse_distance;
          expect_prediction(in, m, cat(model == 0 ? "tied MLP" : "GPT", " N=", n, " ", plan_label(in.zero), " prefetch ", o.prefetch_bucket,
                                       " live ", o.max_live, " persist ", o.persistence_threshold, " reuse ", o.max_reuse_distance));
        }
      }
    }
  }
}

// overlap_comm off, every stage and offload configuration: predicted exactly.
TEST(AgainstEngine, OverlapCommOffEveryConfiguration) {
  const GptShape gpt{64, 16, 32, 2, 2};
  const int batch = 2;
  const std::vector<OffloadCase> cases = every_configuration();
  for (const OffloadCase& oc : cases) {
    const Measured m = measure(3, oc.zero.stage, 2, [&](Ledger& l) { return std::make_unique<Gpt>(gpt, batch, l); },
                               gpt_random_batches(gpt, batch), oc.engine, 0, {}, false);
    PlanInput in = threads_input(describe_gpt(gpt), 3, oc.zero.stage, 2);
    in.zero = oc.zero;
    in.zero.overlap_comm = false;
    in.micro_batch = batch;
    expect_prediction(in, m, cat("GPT N=3 ", plan_label(oc.zero), " without overlap"));
  }
}

// Mixed precision (bf16): the dry run holds the engine's 16-bit parameters and gradients, fp32
// masters and moments, 16-bit collectives and its widening scratch, so it predicts the ledger,
// the traffic, the host bytes and the link exactly, in every stage and offload configuration.
TEST(AgainstEngine, MixedPrecisionEveryConfiguration) {
  const GptShape gpt{64, 16, 32, 2, 2};
  const int batch = 2;
  const std::vector<OffloadCase> cases = every_configuration();
  for (int n : {2, 3}) {
    for (const OffloadCase& oc : cases) {
      const Measured m = measure(n, oc.zero.stage, 2, [&](Ledger& l) { return std::make_unique<Gpt>(gpt, batch, l); },
                                 gpt_random_batches(gpt, batch), oc.engine, 0, {}, true, Dtype::kBf16);
      PlanInput in = threads_input(describe_gpt(gpt), n, oc.zero.stage, 2);
      in.zero = oc.zero;
      in.micro_batch = batch;
      in.dtype = DtypeMode::kMixed;
      expect_prediction(in, m, cat("bf16 GPT N=", n, " ", plan_label(oc.zero)));
    }
  }
}

// ---- offload: what moves to the host, and what crosses the link ----
TEST(Offload, HostHoldsOptimizerStateGradientShardAndFp32Parameters) {
  for (DtypeMode d : {DtypeMode::kFp32, DtypeMode::kMixed}) {
    PlanInput in = counts_input(1e6, 4, 2, d);
    in.zero.offload_optimizer = true;
    const Plan p = plan(in);
    const std::uint64_t S = p.shard_numel, pb = d == DtypeMode::kFp32 ? 4 : 2;
    EXPECT_EQ(p.device[Category::kOptimizerState], 0u);
    EXPECT_EQ(p.persistent_device[Category::kGradients], 0u);
    EXPECT_EQ(p.persistent_device[Category::kParameters], p.padded_numel * pb);
    EXPECT_EQ(p.host.total(), 16 * S);  // m, v, fp32 gradient shard, fp32 parameters (master)
    EXPECT_EQ(p.host_per_node, 16 * S * 4);
    EXPECT_EQ(p.device_to_host_bytes, S * pb);
    EXPECT_EQ(p.host_to_device_bytes, S * pb);
    EXPECT_DOUBLE_EQ(p.link_seconds, 2.0 * S * pb / kPcie4x16Bandwidth);

    // Stage 1 with offload keeps its whole gradients on the device (one policy per stage) and
    // reduces them once per step in place: no transient slices; the same host state and traffic.
    in.zero.stage = 1;
    const Plan one = plan(in);
    EXPECT_EQ(one.device[Category::kGradients], p.padded_numel * pb);
    EXPECT_EQ(one.device[Category::kParameters], p.device[Category::kParameters]);
    EXPECT_EQ(one.traffic.sent, p.traffic.sent);
    EXPECT_EQ(one.host.bytes, p.host.bytes);
    EXPECT_EQ(one.device_to_host_bytes, p.device_to_host_bytes);
    EXPECT_EQ(one.label, "1+opt");
    // The delayed update: a second gradient shard on the host (in the training type), nothing else.
    in.zero.stage = 2;
    in.zero.delayed_update = true;
    const Plan dpu = plan(in);
    EXPECT_EQ(dpu.label, "2+opt+dpu");
    EXPECT_EQ(dpu.host[Category::kGradients], 2 * S * pb);
    EXPECT_EQ(dpu.host.total(), 16 * S + S * pb);
    EXPECT_EQ(dpu.device.bytes, p.device.bytes);
    EXPECT_EQ(dpu.host_to_device_bytes + dpu.device_to_host_bytes, p.host_to_device_bytes + p.device_to_host_bytes);
    in.zero.delayed_update = false;

    in.zero.stage = 3;
    in.zero.offload_param = true;
    const Plan q = plan(in);
    EXPECT_EQ(q.persistent_device.model_states(), 0u);
    EXPECT_EQ(q.host.total(), 16 * S);  // the host shard is the master: nothing more than optimizer offload
    EXPECT_GT(q.device[Category::kGatheredParameters], 0u);
    EXPECT_EQ(q.host_to_device_bytes, 2 * S * pb);  // every unit gathered in forward and in backward
  }
}

// ---- the advisor ----
// Capacities at the thresholds themselves: no headroom (advisor_test.cpp tests the headroom).
Capacity device_only(std::uint64_t bytes) { return {bytes, std::nullopt, 0.0}; }

std::string recommended(const PlanInput& in, const Capacity& c) {
  const EstimateReport r = make_report(in, c, std::nullopt);
  return r.recommendation.index < 0 ? "none" : r.plans[r.recommendation.index].label;
}

TEST(Advisor, FollowsThePractice) {
  PlanInput in = counts_input(1e9, 8, 0, DtypeMode::kMixed);
  auto peak = [&](int stage, bool opt = false, bool param = false) {
    PlanInput t = in;
    t.zero = {stage, opt, param};
    return plan(t).device.total();
  };
  // Fits at stage 1: stage 2 fits too, at the same traffic, with more to spare.
  EXPECT_EQ(recommended(in, device_only(peak(1))), "2");
  EXPECT_EQ(recommended(in, device_only(peak(1) - 1)), "2");  // slightly over: stage 2
  EXPECT_EQ(recommended(in, device_only(peak(2) - 1)), "3");  // far over: stage 3
  const EstimateReport r = make_report(in, device_only(peak(2) - 1), std::nullopt);
  EXPECT_NE(r.recommendation.reasons.back().find("1.5x"), std::string::npos) << r.recommendation.reasons.back();
  // Below stage 3 the host takes over, when it has room: the optimizer first, then parameters.
  const std::uint64_t tib = std::uint64_t(1) << 40;
  EXPECT_EQ(recommended(in, {peak(3) - 1, tib, 0.0}), "2+opt");
  EXPECT_EQ(recommended(in, {peak(2, true) - 1, tib, 0.0}), "3+opt");
  EXPECT_EQ(recommended(in, {peak(3, true) - 1, tib, 0.0}), "3+opt+param");
  EXPECT_EQ(recommended(in, {peak(3, true) - 1, std::nullopt, 0.0}), "3+opt+param");  // host unknown: no limit
  // With the delayed update asked for, the offload rows carry it (3+opt+param cannot).
  PlanInput dpu = in;
  dpu.zero.delayed_update = true;
  EXPECT_EQ(recommended(dpu, {peak(3) - 1, tib, 0.0}), "2+opt+dpu");
  EXPECT_EQ(recommended(dpu, {peak(3, true) - 1, tib, 0.0}), "3+opt+param");
  EXPECT_EQ(make_report(dpu, {}, std::nullopt).plans.size(), 8u);
  // Nothing fits: the fewest ranks at which something would.
  const EstimateReport none = make_report(in, {peak(3) / 8, 1}, std::nullopt);
  EXPECT_EQ(none.recommendation.index, -1);
  ASSERT_TRUE(none.recommendation.ranks_needed);
  EXPECT_GT(*none.recommendation.ranks_needed, 8);
  // One rank: nothing to shard.
  EXPECT_EQ(recommended(counts_input(1e6, 1, 0, DtypeMode::kFp32), device_only(1 << 30)), "0");
}

TEST(Report, JsonParsesAndCarriesThePlans) {
  PlanInput in;
  in.model = named_model("gpt2-xl");
  in.ranks = in.ranks_per_node = 8;
  const EstimateReport r = make_report(in, {parse_byte_size("80GiB", "test"), std::nullopt}, std::nullopt);
  const auto j = nlohmann::json::parse(report_json(r).dump());
  EXPECT_EQ(j["model"]["parameters"], 1'557'611'200);
  EXPECT_EQ(j["plans"].size(), 8u);
  EXPECT_EQ(j["recommendation"]["label"], "2");  // stages 1 and 2 fit at equal traffic: more to spare
  EXPECT_EQ(j["plans"][2]["recommended"], true);
  EXPECT_TRUE(j["plans"][0]["fits"]["host"].is_null());
  EXPECT_EQ(j["plans"][3]["device_bytes"]["total"], r.plans[3].device.total());
  const std::string text = format_report(r);
  EXPECT_NE(text.find("<- recommended"), std::string::npos) << text;
}

// ---- bad input ----
void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << needle;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(BadInput, SizesAndCounts) {
  expect_error([] { describe_counts(0, 1); }, "[planner] the parameter count must be positive");
  expect_error([] { describe_counts(-5, 1); }, "must be positive");
  expect_error([] { describe_counts(100, 0); }, "the largest unit must be positive");
  expect_error([] { describe_counts(100, 101); }, "cannot exceed the parameter count");
  expect_error([] { plan(counts_input(10, 11, 0, DtypeMode::kFp32)); }, "more ranks (11) than parameters (10)");
  PlanInput in = counts_input(1000, 400, 0, DtypeMode::kFp32);  // units of 10 parameters, 400 ranks
  in.model = describe_counts(1000, 10);
  expect_error([&] { plan(in); }, "fewer than the 400 ranks");
  in = counts_input(1e6, 0, 0, DtypeMode::kFp32);
  expect_error([&] { plan(in); }, "ranks must be at least 1");
  in = counts_input(1e6, 2, 4, DtypeMode::kFp32);
  expect_error([&] { plan(in); }, "ZeRO stage 4 does not exist");
  in = counts_input(1e6, 2, 0, DtypeMode::kFp32);
  in.zero.offload_optimizer = true;
  expect_error([&] { plan(in); }, "needs ZeRO stage 1, 2 or 3");
  in.zero.stage = 3;
  in.zero.offload_optimizer = false;
  in.zero.offload_param = true;
  expect_error([&] { plan(in); }, "together with optimizer offload");
  in.zero.offload_optimizer = true;
  in.zero.delayed_update = true;
  expect_error([&] { plan(in); }, "delayed update with parameter offload is not supported");
  in.zero.offload_param = in.zero.offload_optimizer = false;
  expect_error([&] { plan(in); }, "delayed update is a setting of optimizer offload");
  in.zero = {3, true, true};
  in.micro_batch = 0;
  expect_error([&] { plan(in); }, "micro-batch must be at least 1");
  expect_error([] { parse_dtype("fp8"); }, "unknown dtype 'fp8'");
}

TEST(BadInput, MemorySizes) {
  EXPECT_EQ(parse_byte_size("80GB", "--device-memory"), 80'000'000'000u);
  EXPECT_EQ(parse_byte_size("80GiB", "--device-memory"), 80ull << 30);
  EXPECT_EQ(parse_byte_size("8e10", "--device-memory"), 80'000'000'000u);
  EXPECT_EQ(parse_byte_size("1.5TB", "--host-memory"), 1'500'000'000'000u);
  EXPECT_EQ(parse_byte_size("512 gib", "--host-memory"), 512ull << 30);
  EXPECT_EQ(parse_byte_size("4096", "--device-memory"), 4096u);
  EXPECT_DOUBLE_EQ(parse_bandwidth("25GB/s", "--link-bandwidth"), 25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("2.5e10", "--link-bandwidth"), 25e9);
  expect_error([] { parse_byte_size("80 gigs", "--device-memory"); },
               "[planner] cannot read '80 gigs' as a memory size for --device-memory");
  expect_error([] { parse_byte_size("80G", "--device-memory"); }, "ambiguous");
  expect_error([] { parse_byte_size("0GB", "--device-memory"); }, "must be positive");
  expect_error([] { parse_byte_size("-8GB", "--device-memory"); }, "must be positive");
  expect_error([] { parse_byte_size("", "--host-memory"); }, "cannot read");
  expect_error([] { parse_byte_size("1e30", "--host-memory"); }, "beyond 2^64");
  expect_error([] { parse_byte_size("25GB/s", "--host-memory"); }, "cannot read");
}

TEST(BadInput, UnknownModelListsTheKnown) {
  expect_error([] { named_model("gpt5"); }, "unknown model 'gpt5'; known models: gpt2, gpt2-large");
  expect_error([] { describe_llama({32000, 4096, 4096, 32, 32, 5, 11008}); }, "must divide by n_kv_head");
}

}  // namespace
}  // namespace zero
