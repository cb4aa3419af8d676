// Every engine setting reaches the plan: for each field of EngineSettings (and of the structs it
// holds), varied from its default one at a time in several stage and offload placements, the
// planner's dry run and the engine (two thread ranks, the tied test MLP, two micro-batches) run
// the same settings, and the plan's device bytes by category at the peak, host bytes by
// category, traffic by collective and bytes over the host link equal what the engine's ledger
// and counters measure. A setting the dry run dropped (as its old input dropped clipping and
// fp16's loss scaling, which decide when offload's host Adam runs) fails here. The list of
// fields is checked against the structs' own field counts, so a new setting must be listed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "comm/thread_world.h"
#include "common/error.h"
#include "engine/engine.h"
#include "model/mlp.h"
#include "planner/placement.h"
#include "planner/planner.h"

namespace zero {
namespace {

// The number of fields of an aggregate: the most initializers T{...} accepts. A field that is
// itself an aggregate counts once (AnyField converts to it whole, so no brace elision).
struct AnyField {
  template <class T>
  operator T() const;  // declared only: used in unevaluated contexts
};

template <class T, class... Fields>
constexpr std::size_t field_count() {
  if constexpr (requires { T{Fields{}..., AnyField{}}; }) {
    return field_count<T, Fields..., AnyField>();
  } else {
    return sizeof...(Fields);
  }
}

struct Variation {
  std::string field;                        // "offload.pin_memory"
  std::function<void(EngineSettings&)> vary;  // away from the default (and what the field needs to act)
};

// fp16 with a first scale the test MLP's gradients do not overflow (a skipped step has no
// gathers, which the dry run, where nothing overflows, would not see).
void fp16(EngineSettings& s) {
  s.precision.compute = Dtype::kF16;
  s.precision.loss_scaler.initial_scale_power = 8;
}

void lamb(EngineSettings& s) { s.optimizer = OptimizerKind::kLamb; }
// 1-bit and 0/1 Adam (stage 0 only: the other placements refuse them), in their warm-up for the two
// steps measured (the planner plans the warm-up step's uncompressed all-reduce)
void onebit(EngineSettings& s) { s.optimizer = OptimizerKind::kOneBitAdam; }
void zero_one(EngineSettings& s) { s.optimizer = OptimizerKind::kZeroOneAdam; }

// The NVMe tier, its swap folder on /dev/shm (what is counted does not depend on the disk), in
// sub-groups of 50 elements: smaller than the test MLP's parts, so the buffers are sub-groups.
void nvme(EngineSettings& s) {
  static const std::string folder = [] {
    const std::string f = cat("/dev/shm/zero-settings-plan-", ::getpid());
    std::filesystem::create_directories(f);
    std::atexit([] { std::filesystem::remove_all(cat("/dev/shm/zero-settings-plan-", ::getpid())); });
    return f;
  }();
  s.offload.optimizer = s.offload.optimizer_nvme = true;
  s.offload.nvme.path = folder;
  s.offload.nvme.sub_group_size = 50;
}

// offload_param "nvme" (stage 3, with the optimizer on the NVMe tier), in the same folder.
void nvme_params(EngineSettings& s) {
  nvme(s);
  s.stage = 3;
  s.offload.params = s.offload.params_nvme = true;
  s.offload.param_nvme.path = s.offload.nvme.path;
}

// ZenFlow with host offload (stages 1 and 2): a selection and a CPU update every step.
void zenflow(EngineSettings& s) {
  s.offload.optimizer = true;
  s.offload.zenflow = {true, 0.3, 1, 1, 0, false};
}

std::vector<Variation> variations() {
  return {
      {"stage", [](EngineSettings& s) { s.stage = s.stage == 3 ? 1 : 3; }},
      {"offload.optimizer", [](EngineSettings& s) { s.offload.optimizer = !s.offload.optimizer; }},
      {"offload.params", [](EngineSettings& s) { s.offload.params = !s.offload.params; }},
      {"offload.pin_memory", [](EngineSettings& s) { s.offload.pin_memory = true; }},
      {"offload.delayed_update", [](EngineSettings& s) { s.offload.delayed_update = true; }},
      {"offload.warmup_steps", [](EngineSettings& s) { s.offload.delayed_update = true, s.offload.warmup_steps = 1; }},
      {"offload.optimizer_nvme", nvme},
      {"offload.nvme.path", [](EngineSettings& s) { nvme(s), s.offload.nvme.path += "/."; }},
      {"offload.nvme.buffer_count", [](EngineSettings& s) { nvme(s), s.offload.nvme.buffer_count = 1; }},
      {"offload.nvme.sub_group_size", [](EngineSettings& s) { nvme(s), s.offload.nvme.sub_group_size = 7; }},
      {"offload.nvme.block_size", [](EngineSettings& s) { nvme(s), s.offload.nvme.block_size = 4096; }},
      {"offload.nvme.queue_depth", [](EngineSettings& s) { nvme(s), s.offload.nvme.queue_depth = 2; }},
      {"offload.params_nvme", nvme_params},
      {"offload.param_nvme.path", [](EngineSettings& s) { nvme_params(s), s.offload.param_nvme.path += "/."; }},
      {"offload.param_nvme.buffer_count", [](EngineSettings& s) { nvme_params(s), s.offload.param_nvme.buffer_count = 1; }},
      {"offload.param_nvme.buffer_size", [](EngineSettings& s) { nvme_params(s), s.offload.param_nvme.buffer_size = 1000; }},
      {"offload.param_nvme.max_in_cpu", [](EngineSettings& s) { nvme_params(s), s.offload.param_nvme.max_in_cpu = 0; }},
      {"offload.zenflow.enabled", zenflow},
      {"offload.zenflow.topk_ratio", [](EngineSettings& s) { zenflow(s), s.offload.zenflow.topk_ratio = 1.0; }},
      {"offload.zenflow.select_interval", [](EngineSettings& s) { zenflow(s), s.offload.zenflow.select_interval = 0; }},
      {"offload.zenflow.update_interval", [](EngineSettings& s) { zenflow(s), s.offload.zenflow.select_interval = 0, s.offload.zenflow.update_interval = 2; }},
      {"offload.zenflow.full_warm_up_rounds", [](EngineSettings& s) { zenflow(s), s.offload.zenflow.full_warm_up_rounds = 1; }},
      {"offload.zenflow.overlap_step", [](EngineSettings& s) { zenflow(s), s.offload.zenflow.overlap_step = true; }},
      {"reduce_bucket_elements", [](EngineSettings& s) { s.reduce_bucket_elements = 64; }},
      {"allgather_bucket_elements", [](EngineSettings& s) { s.allgather_bucket_elements = 64; }},
      {"overlap_comm", [](EngineSettings& s) { s.overlap_comm = false; }},
      {"stage3.prefetch_bucket", [](EngineSettings& s) { s.stage3.prefetch_bucket = 1'000'000'000; }},
      {"stage3.max_live", [](EngineSettings& s) { s.stage3.prefetch_bucket = 1'000, s.stage3.max_live = 700; }},
      {"stage3.persistence_threshold", [](EngineSettings& s) { s.stage3.persistence_threshold = 250; }},
      {"stage3.max_reuse_distance", [](EngineSettings& s) { s.stage3.max_reuse_distance = 1'000'000'000; }},
      {"precision.compute", [](EngineSettings& s) { s.precision.compute = Dtype::kBf16; }},
      {"precision.compute", fp16},
      {"precision.loss_scaler.static_scale", [](EngineSettings& s) { fp16(s), s.precision.loss_scaler.static_scale = 64; }},
      {"precision.loss_scaler.initial_scale_power", [](EngineSettings& s) { fp16(s), s.precision.loss_scaler.initial_scale_power = 4; }},
      {"precision.loss_scaler.window", [](EngineSettings& s) { fp16(s), s.precision.loss_scaler.window = 1; }},
      {"precision.loss_scaler.hysteresis", [](EngineSettings& s) { fp16(s), s.precision.loss_scaler.hysteresis = 1; }},
      {"precision.loss_scaler.consecutive_hysteresis", [](EngineSettings& s) { fp16(s), s.precision.loss_scaler.consecutive_hysteresis = true; }},
      {"precision.loss_scaler.min_scale", [](EngineSettings& s) { fp16(s), s.precision.loss_scaler.min_scale = 2; }},
      {"gradient_clipping", [](EngineSettings& s) { s.gradient_clipping = 1.0f; }},
      {"gradient_predivide_factor", [](EngineSettings& s) { s.gradient_predivide_factor = 2.0; }},
      {"report_grad_norm", [](EngineSettings& s) { s.report_grad_norm = true; }},
      {"mics_shard_size", [](EngineSettings& s) { s.mics_shard_size = 1; }},  // groups of 1 of the 2 ranks: all-reduced across
      {"quantized_weights", [](EngineSettings& s) { s.quantized_weights = true; }},  // ZeRO++ qwZ: stage 3 only
      {"hpz_partition_size", [](EngineSettings& s) { s.hpz_partition_size = 2; }},  // ZeRO++ hpZ: stage 3 only
      // (one node here, where qgZ keeps stage 3's reduce-scatter; planner_engine_test runs it on nodes)
      {"zero_quantized_gradients", [](EngineSettings& s) { s.zero_quantized_gradients = true; }},
      {"optimizer", lamb},
      {"adam.lr", [](EngineSettings& s) { s.adam.lr = 0.5f; }},
      {"adam.beta1", [](EngineSettings& s) { s.adam.beta1 = 0.5f; }},
      {"adam.beta2", [](EngineSettings& s) { s.adam.beta2 = 0.5f; }},
      {"adam.eps", [](EngineSettings& s) { s.adam.eps = 1e-3f; }},
      {"adam.weight_decay", [](EngineSettings& s) { s.adam.weight_decay = 0.1f; }},
      {"adam.decoupled", [](EngineSettings& s) { s.adam.decoupled = false; }},
      {"adam.bias_correction", [](EngineSettings& s) { s.adam.bias_correction = false; }},
      {"optimizer", onebit},
      {"onebit.freeze_step", [](EngineSettings& s) { onebit(s), s.onebit.freeze_step = 50; }},
      {"optimizer", zero_one},
      {"zero_one.var_freeze_step", [](EngineSettings& s) { zero_one(s), s.zero_one.var_freeze_step = 50; }},
      {"zero_one.var_update_scaler", [](EngineSettings& s) { zero_one(s), s.zero_one.var_update_scaler = 8; }},
      {"zero_one.local_step_scaler", [](EngineSettings& s) { zero_one(s), s.zero_one.local_step_scaler = 100; }},
      {"zero_one.local_step_clipper", [](EngineSettings& s) { zero_one(s), s.zero_one.local_step_clipper = 8; }},
      {"lamb.max_coeff", [](EngineSettings& s) { lamb(s), s.lamb.max_coeff = 0.5f; }},
      {"lamb.min_coeff", [](EngineSettings& s) { lamb(s), s.lamb.min_coeff = 0.1f; }},
      {"lamb.eps_inside_sqrt", [](EngineSettings& s) { lamb(s), s.lamb.eps_inside_sqrt = true; }},
  };
}

// How many distinct fields of each struct the list varies: "" for EngineSettings' own (a nested
// struct counts as one field there), "offload" for OffloadOptions' ...
std::map<std::string, std::set<std::string>> listed_fields() {
  std::map<std::string, std::set<std::string>> by_struct;
  for (const Variation& v : variations()) {
    // "precision.loss_scaler.window": "precision" of "", "loss_scaler" of "precision", "window" of
    // "precision.loss_scaler".
    const std::string& f = v.field;
    for (std::size_t begin = 0;;) {
      const std::size_t dot = f.find('.', begin);
      const std::string parent = begin == 0 ? std::string() : f.substr(0, begin - 1);
      by_struct[parent].insert(f.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
      if (dot == std::string::npos) break;
      begin = dot + 1;
    }
  }
  return by_struct;
}

TEST(SettingsReachThePlan, TheListNamesEveryField) {
  const auto listed = listed_fields();
  EXPECT_EQ(listed.at("").size(), field_count<EngineSettings>()) << "a field of EngineSettings is missing from variations()";
  EXPECT_EQ(listed.at("offload").size(), field_count<OffloadOptions>());
  EXPECT_EQ(listed.at("offload.nvme").size(), field_count<NvmeOptions>());
  EXPECT_EQ(listed.at("offload.param_nvme").size(), field_count<NvmeParamOptions>());
  EXPECT_EQ(listed.at("offload.zenflow").size(), field_count<ZenflowOptions>());
  EXPECT_EQ(listed.at("stage3").size(), field_count<Stage3Options>());
  EXPECT_EQ(listed.at("precision").size(), field_count<Precision>());
  EXPECT_EQ(listed.at("precision.loss_scaler").size(), field_count<LossScalerConfig>());
  EXPECT_EQ(listed.at("adam").size(), field_count<AdamConfig>());
  EXPECT_EQ(listed.at("lamb").size(), field_count<LambConfig>());
  EXPECT_EQ(listed.at("onebit").size(), field_count<OneBitAdamConfig>());
  EXPECT_EQ(listed.at("zero_one").size(), field_count<ZeroOneAdamConfig>());
}

struct Measured {
  TierUsage device, host;
  Traffic traffic;
  TierUsage nvme;
  std::uint64_t to_host = 0, to_device = 0;
};

constexpr int kRanks = 2, kMicroBatches = 2;
const MlpShape kShape{{9, 21, 17, 21, 9}, true};

// Two optimizer steps on thread ranks; rank 0's ledger, and the second step's traffic and copies.
Measured measure(const EngineSettings& settings) {
  ThreadWorld world(kRanks, {std::chrono::seconds(60), nullptr});
  std::vector<Measured> out(kRanks);
  world.run([&](int r) {
    Ledger ledger;
    auto comm = world.communicator(r, &ledger);
    Mlp model(kShape);
    EngineConfig c;
    static_cast<EngineSettings&>(c) = settings;
    Engine engine(c, model, *comm, ledger);
    for (int step = 0; step < 2; ++step) {
      for (int m = 0; m < kMicroBatches; ++m) {
        model.set_batch(mlp_synthetic_batch(kShape, 7, step * kMicroBatches + m, r * 2, 2));
        engine.forward_backward(m + 1 == kMicroBatches);
      }
      engine.step();
    }
    out[r] = {ledger.usage(Tier::kDevice), ledger.usage(Tier::kHost), engine.last_step_traffic(), ledger.usage(Tier::kNvme),
              engine.last_step_to_host(), engine.last_step_to_device()};
  });
  return out[0];
}

// One collective's packing scratch with a bucket of this many elements, when it splits a unit of
// the test MLP (under a thousand elements a unit; f32, the widest element).
std::uint64_t packing_scratch(std::size_t bucket) {
  if (bucket == 0 || bucket >= 1000) return 0;
  return kRanks * std::max<std::size_t>(1, bucket / kRanks) * sizeof(float);
}

void expect_plan_is_ledger(const EngineSettings& settings, const std::string& what) {
  PlanInput in;
  in.model = ModelDescription{"mlp", "mlp", "", "", Mlp(kShape).units(), std::nullopt, std::nullopt};
  in.ranks = in.ranks_per_node = kRanks;
  in.gradient_accumulation_steps = kMicroBatches;
  in.comm_scratch = false;  // the threads backend has no reduce-scatter scratch
  in.settings = settings;
  const Plan p = plan(in);
  const Measured m = measure(settings);
  // Buckets smaller than a unit: the dry run holds a piece's packing scratch from the
  // collective's issue to its wait, the comm thread only while it runs (planner.h), so the
  // prediction bounds the ledger's communication buffers by at most one collective's scratch.
  const std::uint64_t packing = packing_scratch(settings.reduce_bucket_elements) + packing_scratch(settings.allgather_bucket_elements);
  for (int c = 0; c < kNumCategories; ++c) {
    const std::string category = category_name(static_cast<Category>(c));
    if (static_cast<Category>(c) == Category::kCommBuffers && packing > 0) {
      EXPECT_GE(p.device.bytes[c], m.device.at_peak[c]) << what << ": device " << category << " at the peak";
      EXPECT_LE(p.device.bytes[c], m.device.at_peak[c] + packing) << what << ": device " << category << " at the peak";
      continue;
    }
    EXPECT_EQ(p.device.bytes[c], m.device.at_peak[c]) << what << ": device " << category << " at the peak";
    EXPECT_EQ(p.host.bytes[c], m.host.at_peak[c]) << what << ": host " << category << " at the peak";
    EXPECT_EQ(p.nvme.bytes[c], m.nvme.at_peak[c]) << what << ": nvme " << category << " at the peak";
  }
  for (int c = 0; c < kNumCollectives; ++c) {
    const std::string op = collective_name(static_cast<Collective>(c));
    EXPECT_EQ(p.traffic.sent[c], m.traffic.sent[c]) << what << ": " << op << " bytes";
    EXPECT_EQ(p.traffic.calls[c], m.traffic.calls[c]) << what << ": " << op << " calls";
  }
  EXPECT_EQ(p.device_to_host_bytes, m.to_host) << what << ": bytes to the host";
  EXPECT_EQ(p.host_to_device_bytes, m.to_device) << what << ": bytes to the device";
}

// Each field varied in each placement the engine accepts with it (settings_problems empty).
TEST(SettingsReachThePlan, EveryFieldInEveryPlacement) {
  const std::vector<EngineSettings> bases = {placement(0), placement(1), placement(2), placement(3), placement(2, true),
                                             placement(3, true, true)};
  std::map<std::string, int> runs;
  for (const Variation& v : variations()) {
    for (const EngineSettings& base : bases) {
      EngineSettings s = base;
      v.vary(s);
      if (!settings_problems(s).empty()) continue;  // a combination the engine refuses (the config reports it)
      expect_plan_is_ledger(s, cat(v.field, " varied at ", plan_label(base), " (runs as ", plan_label(s), ")"));
      ++runs[v.field];
    }
  }
  for (const Variation& v : variations()) EXPECT_GE(runs[v.field], 1) << v.field << " ran in no placement";
}

}  // namespace
}  // namespace zero
