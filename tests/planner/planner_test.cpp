// The planner: the ZeRO paper's Table 1, the stage formulas, the named shapes, the advisor's
// choices, the JSON, and bad input (planner_engine_test.cpp: the planner against the engine).
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
#include "planner/placement.h"
#include "planner/report.h"

namespace zero {
namespace {

PlanInput counts_input(double psi, int ranks, int stage, Dtype dtype) {
  PlanInput in;
  const auto p = static_cast<std::int64_t>(psi);
  in.model = describe_counts(p, std::max<std::int64_t>(1, p / 100));  // 100 units: each pads by < 1024
  in.ranks = in.ranks_per_node = ranks;
  in.settings.precision.compute = dtype;
  in.settings.stage = stage;
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
        const Plan p = plan(counts_input(kTable1Psi[m], row.nd, stage, Dtype::kBf16));
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
    for (Dtype d : {Dtype::kF32, Dtype::kBf16}) {
      const bool fp32 = d == Dtype::kF32;
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
    in.settings.stage = stage;
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
      {"llama3-70b", 70'553'706'496},  {"tinyllama-1.1b", 1'100'048'384},
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
  for (const char* name : {"llama2-7b", "llama2-70b", "tinyllama-1.1b", "llama3-8b"}) {
    const ModelDescription m = named_model(name);
    ASSERT_TRUE(m.llama) << name;
    EXPECT_EQ(m.llama->num_parameters(), m.num_parameters()) << name;
  }
  LlamaShape tied = *named_model("tinyllama-1.1b").llama;
  tied.tie_word_embeddings = true;  // the head borrows the embedding: V*C fewer parameters
  EXPECT_EQ(describe_llama(tied).num_parameters(), named_model("tinyllama-1.1b").num_parameters() - 32000LL * 2048);
  EXPECT_EQ(describe_llama(tied).units.back().borrows, std::vector<int>{0});
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

// ---- offload: what moves to the host, and what crosses the link ----
TEST(Offload, HostHoldsOptimizerStateGradientShardAndFp32Parameters) {
  for (Dtype d : {Dtype::kF32, Dtype::kBf16}) {
    PlanInput in = counts_input(1e6, 4, 2, d);
    in.settings.offload.optimizer = true;
    const Plan p = plan(in);
    const std::uint64_t S = p.shard_numel, pb = d == Dtype::kF32 ? 4 : 2;
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
    in.settings.stage = 1;
    const Plan one = plan(in);
    EXPECT_EQ(one.device[Category::kGradients], p.padded_numel * pb);
    EXPECT_EQ(one.device[Category::kParameters], p.device[Category::kParameters]);
    EXPECT_EQ(one.traffic.sent, p.traffic.sent);
    EXPECT_EQ(one.host.bytes, p.host.bytes);
    EXPECT_EQ(one.device_to_host_bytes, p.device_to_host_bytes);
    EXPECT_EQ(one.label, "1+opt");
    // The delayed update: a second gradient shard on the host (in the training type), nothing else.
    in.settings.stage = 2;
    in.settings.offload.delayed_update = true;
    const Plan dpu = plan(in);
    EXPECT_EQ(dpu.label, "2+opt+dpu");
    EXPECT_EQ(dpu.host[Category::kGradients], 2 * S * pb);
    EXPECT_EQ(dpu.host.total(), 16 * S + S * pb);
    EXPECT_EQ(dpu.device.bytes, p.device.bytes);
    EXPECT_EQ(dpu.host_to_device_bytes + dpu.device_to_host_bytes, p.host_to_device_bytes + p.device_to_host_bytes);
    in.settings.offload.delayed_update = false;

    in.settings.stage = 3;
    in.settings.offload.params = true;
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
  PlanInput in = counts_input(1e9, 8, 0, Dtype::kBf16);
  auto peak = [&](int stage, bool opt = false, bool param = false) {
    PlanInput t = in;
    t.settings.stage = stage;
    t.settings.offload.optimizer = opt;
    t.settings.offload.params = param;
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
  dpu.settings.offload.delayed_update = true;
  EXPECT_EQ(recommended(dpu, {peak(3) - 1, tib, 0.0}), "2+opt+dpu");
  EXPECT_EQ(recommended(dpu, {peak(3, true) - 1, tib, 0.0}), "3+opt+param");
  EXPECT_EQ(make_report(dpu, {}, std::nullopt).plans.size(), 8u);
  // Nothing fits: the fewest ranks at which something would.
  const EstimateReport none = make_report(in, {peak(3) / 8, 1}, std::nullopt);
  EXPECT_EQ(none.recommendation.index, -1);
  ASSERT_TRUE(none.recommendation.ranks_needed);
  EXPECT_GT(*none.recommendation.ranks_needed, 8);
  // One rank: nothing to shard.
  EXPECT_EQ(recommended(counts_input(1e6, 1, 0, Dtype::kF32), device_only(1 << 30)), "0");
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
  expect_error([] { plan(counts_input(10, 11, 0, Dtype::kF32)); }, "more ranks (11) than parameters (10)");
  PlanInput in = counts_input(1000, 400, 0, Dtype::kF32);  // units of 10 parameters, 400 ranks
  in.model = describe_counts(1000, 10);
  expect_error([&] { plan(in); }, "fewer than the 400 ranks");
  in = counts_input(1e6, 0, 0, Dtype::kF32);
  expect_error([&] { plan(in); }, "ranks must be at least 1");
  in = counts_input(1e6, 2, 4, Dtype::kF32);
  expect_error([&] { plan(in); }, "zero_optimization.stage is 4; ZeRO stages are 0-3");
  in = counts_input(1e6, 2, 0, Dtype::kF32);
  in.settings.offload.optimizer = true;
  expect_error([&] { plan(in); }, "needs ZeRO stage 1, 2 or 3");
  in.settings.stage = 2;
  in.settings.offload.optimizer = false;
  in.settings.offload.params = true;
  expect_error([&] { plan(in); }, "offloads parameters, which only stage 3 shards");
  in.settings.stage = 3;  // parameter offload alone is planned (planner_engine_test: exact against the engine)
  EXPECT_EQ(plan(in).label, "3+param");
  in.settings.offload.optimizer = true;
  in.settings.offload.delayed_update = true;
  expect_error([&] { plan(in); }, "delayed_update with offload_param is not supported");
  in.settings.offload.params = in.settings.offload.optimizer = false;
  expect_error([&] { plan(in); }, "delayed_update is a setting of offload_optimizer");
  in.settings = placement(3, true, true);
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
  expect_error([] {
    LlamaShape s = *named_model("llama2-7b").llama;
    s.kv_heads = 5;
    describe_llama(s);
  }, "num_key_value_heads (5) must divide num_attention_heads (32)");
}

}  // namespace
}  // namespace zero
