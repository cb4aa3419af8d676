// The config files people already have: every problem reported at once, "auto" resolved as the
// Hugging Face Trainer resolves it, DeepSpeed's whole schema known, unknown top-level keys
// accepted as DeepSpeed accepts them, and input that cannot crash the reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <typeinfo>
#include <set>
#include <string>

#include "config/config_test_util.h"
#include "planner/byte_size.h"

namespace zero {
namespace {

using nlohmann::json;

using namespace config_test;

bool has_line(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

// ---- DeepSpeed's schema ----

TEST(ConfigSchema, EveryDeepSpeedKeyIsInZerosTable) {
  std::ifstream in(fixture("deepspeed_keys.txt"));
  ASSERT_TRUE(in) << "deepspeed_keys.txt";
  const std::vector<std::string> known = known_config_keys();
  const std::set<std::string> table(known.begin(), known.end());
  int checked = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(table.count(line)) << "DeepSpeed's key '" << line << "' is missing from zero's tables";
    ++checked;
  }
  EXPECT_GE(checked, 130);
}

TEST(ConfigSchema, DeepSpeedKeysZeroLacksAreNamedAsSuch) {
  json j = {{"train_batch_size", 8}, {"disable_allgather", true}, {"seq_parallel_communication_data_type", "bf16"},
            {"graph_harvesting", false}, {"use_data_before_expert_parallelism", true}, {"gradient_allreduce_op", "mean"},
            {"managed_gradient_accumulation", true}, {"checkpoint", {{"tag_validation", "Warn"}}}};
  const TrainConfig c = parse_config(j, 1);
  for (const char* k : {"disable_allgather", "seq_parallel_communication_data_type", "graph_harvesting", "use_data_before_expert_parallelism", "checkpoint"}) {
    EXPECT_TRUE(has_line(c.ignored_keys, k)) << k;
  }
  EXPECT_TRUE(c.unknown_keys.empty());
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"gradient_allreduce_op", "sum"}}),
                  "gradient_allreduce_op = \"sum\" is known but not supported yet");
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"zero_optimization", {{"legacy_stage1", true}}}}),
                  "zero_optimization.legacy_stage1 = true is known but not supported yet: DeepSpeed's old stage 1");
}

// Hybrid sharding: read at stages 1-3; a group that does not divide the world, a size that is no
// group, and stage 0 (which DeepSpeed ignores the key at: nothing to shard) refused while the
// config is read, before any rank starts.
TEST(ConfigSchema, MicsShardSizeIsReadAndCheckedAgainstTheWorld) {
  const auto with = [](int stage, int g) {
    return json{{"train_batch_size", 8}, {"zero_optimization", {{"stage", stage}, {"mics_shard_size", g}}}};
  };
  EXPECT_EQ(parse_config(with(3, 2), 4).engine.mics_shard_size, 2);
  EXPECT_EQ(parse_config(with(1, 4), 8).engine.mics_shard_size, 4);
  EXPECT_CONTAINS(error_of(with(3, 3), 4), "zero_optimization.mics_shard_size is 3, which does not divide the 4 ranks into equal shard "
                                           "groups: use a divisor of 4");
  EXPECT_CONTAINS(error_of(with(2, 8), 4), "zero_optimization.mics_shard_size is 8, which does not divide the 4 ranks");
  EXPECT_CONTAINS(error_of(with(0, 2), 4), "zero_optimization.mics_shard_size shards the state among groups of ranks, and stage 0 "
                                           "shards nothing");
  EXPECT_CONTAINS(error_of(with(3, 0), 4), "zero_optimization.mics_shard_size is 0; it must be a positive number of ranks");
}

// ---- All problems at once ----

TEST(ConfigProblems, FiveMistakesGetFiveMessagesInOneRun) {
  const json j = {{"train_batch_size", 8},
                  {"zero_optimization", {{"stgae", 2}}},
                  {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", -1}}}}},
                  {"scheduler", {{"type", "WarmupCosine"}}},
                  {"gradient_clipping", "1.0"},
                  {"data", {{"format", "csv"}}}};
  const std::string msg = error_of(j);
  EXPECT_CONTAINS(msg, "[config] 5 problems; fix them all, then run again:");
  EXPECT_CONTAINS(msg, "unknown key 'zero_optimization.stgae'; did you mean 'zero_optimization.stage'?");
  EXPECT_CONTAINS(msg, "optimizer.params.lr is -1; the learning rate must be >= 0");
  EXPECT_CONTAINS(msg, "scheduler.type \"WarmupCosine\" is not a DeepSpeed scheduler zero knows; did you mean \"WarmupCosineLR\"?");
  EXPECT_CONTAINS(msg, "gradient_clipping must be a number, found \"1.0\"");
  EXPECT_CONTAINS(msg, "data.format is \"csv\"");
  EXPECT_CONTAINS(msg, "\n  5. ");
  EXPECT_EQ(msg.find("\n  6. "), std::string::npos);
}

TEST(ConfigProblems, FileNameLeadsTheMessage) {
  const std::string path = write_temp("two.json", R"({"train_batch_size": 0, "zero_optimization": {"stage": 7}})");
  const std::string msg = load_error(path);
  EXPECT_CONTAINS(msg, "[config] " + path + ": 2 problems");
  EXPECT_CONTAINS(msg, "train_batch_size is 0");
  EXPECT_CONTAINS(msg, "zero_optimization.stage is 7");
}

TEST(ConfigProblems, SwappedOptimizerShowsAllItsParametersAtOnce) {
  const json onebit = {{"type", "OneBitLamb"}, {"params", {{"lr", 1e-3}, {"max_coeff", 0.3}, {"freeze_step", 100}, {"cuda_aware", false}}}};
  const std::string msg = error_of({{"train_batch_size", 8}, {"optimizer", onebit}});
  EXPECT_CONTAINS(msg, "optimizer.type \"OneBitLamb\" is known but not supported yet: 1-bit Lamb's compressed momentum");
  EXPECT_CONTAINS(msg, "unknown key 'optimizer.params.freeze_step' (a parameter of OneBitLamb that Adam and AdamW do not have");
  EXPECT_CONTAINS(msg, "optimizer.params.cuda_aware");
  json adamw = onebit;
  adamw["type"] = "AdamW";  // what the user tries next: every leftover in one run
  const std::string next = error_of({{"train_batch_size", 8}, {"optimizer", adamw}});
  EXPECT_CONTAINS(next, "3 problems");
  EXPECT_CONTAINS(next, "optimizer.params.max_coeff");
  EXPECT_CONTAINS(next, "optimizer.params.freeze_step");
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"optimizer", {{"type", "OneBitLamb"}}}}), "(zero has 1-bit Adam, \"OneBitAdam\"");
}

// DeepSpeed's Lamb (FusedLamb): Adam's parameters and its own; its defaults are FusedLamb's.
TEST(ConfigLamb, ParametersAndDefaultsAsFusedLamb) {
  const json lamb = {{"type", "Lamb"}, {"params", {{"lr", 11e-3}, {"weight_decay", 0.01}, {"bias_correction", false}, {"max_coeff", 0.3},
                                                   {"min_coeff", 0.01}, {"eps_inside_sqrt", true}, {"max_grad_norm", 0.0}}}};
  const TrainConfig c = parse_config({{"train_batch_size", 8}, {"optimizer", lamb}}, 1);
  EXPECT_EQ(c.optimizer_type, "Lamb");
  EXPECT_FLOAT_EQ(c.engine.adam.lr, 11e-3f);
  EXPECT_FLOAT_EQ(c.engine.adam.weight_decay, 0.01f);
  EXPECT_FALSE(c.engine.adam.bias_correction);
  EXPECT_FLOAT_EQ(c.engine.lamb.max_coeff, 0.3f);
  EXPECT_FLOAT_EQ(c.engine.lamb.min_coeff, 0.01f);
  EXPECT_TRUE(c.engine.lamb.eps_inside_sqrt);
  const TrainConfig d = parse_config({{"train_batch_size", 8}, {"optimizer", {{"type", "lamb"}}}}, 1);
  EXPECT_EQ(d.optimizer_type, "Lamb");
  EXPECT_FLOAT_EQ(d.engine.lamb.max_coeff, 10.0f);
  EXPECT_FLOAT_EQ(d.engine.lamb.min_coeff, 0.01f);
  EXPECT_FALSE(d.engine.lamb.eps_inside_sqrt);
  EXPECT_TRUE(d.engine.adam.bias_correction);
}

// DeepSpeed's OneBitAdam (its OnebitAdam): Adam's parameters and freeze_step; cuda_aware and
// comm_backend_name accepted (the compression runs on host memory over the run's communicator);
// no bias correction whatever bias_correction says (OnebitAdam never reads it); stage 0 only.
TEST(ConfigOneBitAdam, ParametersAndWhatItRefuses) {
  const json onebit = {{"type", "OneBitAdam"}, {"params", {{"lr", 4e-4}, {"weight_decay", 0.01}, {"bias_correction", true}, {"freeze_step", 23000},
                                                          {"cuda_aware", false}, {"comm_backend_name", "mpi"}}}};
  const TrainConfig c = parse_config({{"train_batch_size", 8}, {"optimizer", onebit}}, 2);
  EXPECT_EQ(c.optimizer_type, "OneBitAdam");
  EXPECT_EQ(c.engine.optimizer, OptimizerKind::kOneBitAdam);
  EXPECT_EQ(c.engine.onebit.freeze_step, 23000);
  EXPECT_FLOAT_EQ(c.engine.adam.lr, 4e-4f);
  EXPECT_FALSE(c.engine.adam.bias_correction);
  EXPECT_TRUE(c.engine.adam.decoupled);
  EXPECT_EQ(parse_config({{"train_batch_size", 8}, {"optimizer", {{"type", "onebitadam"}}}}, 2).engine.onebit.freeze_step, 100000);
  json bad = onebit;
  bad["params"]["freeze_step"] = -1;
  bad["params"]["comm_backend_name"] = "gloo";
  const std::string msg = error_of({{"train_batch_size", 8}, {"optimizer", bad}, {"zero_optimization", {{"stage", 2}}}});
  EXPECT_CONTAINS(msg, "3 problems");
  EXPECT_CONTAINS(msg, "optimizer.params.freeze_step");
  EXPECT_CONTAINS(msg, "optimizer.params.comm_backend_name is \"gloo\"");
  EXPECT_CONTAINS(msg, "optimizer.type = OneBitAdam needs zero_optimization.stage 0, not 2");
}

// DeepSpeed's ZeroOneAdam: its four schedule keys, DeepSpeed's defaults where absent; stage 0 only.
TEST(ConfigOneBitAdam, ZeroOneAdamParameters) {
  const json z = {{"type", "ZeroOneAdam"}, {"params", {{"lr", 4e-4}, {"var_freeze_step", 12500}, {"local_step_scaler", 32678},
                                                       {"cuda_aware", false}, {"comm_backend_name", "nccl"}}}};
  const TrainConfig c = parse_config({{"train_batch_size", 8}, {"optimizer", z}}, 2);
  EXPECT_EQ(c.optimizer_type, "ZeroOneAdam");
  EXPECT_EQ(c.engine.optimizer, OptimizerKind::kZeroOneAdam);
  EXPECT_EQ(c.engine.zero_one.var_freeze_step, 12500);
  EXPECT_EQ(c.engine.zero_one.var_update_scaler, 16);
  EXPECT_EQ(c.engine.zero_one.local_step_scaler, 32678);
  EXPECT_EQ(c.engine.zero_one.local_step_clipper, 16);
  EXPECT_FALSE(c.engine.adam.bias_correction);
  json bad = z;
  bad["params"]["local_step_clipper"] = 0;
  bad["params"]["freeze_step"] = 10;  // 1-bit Adam's key
  const std::string msg = error_of({{"train_batch_size", 8}, {"optimizer", bad}, {"zero_optimization", {{"stage", 1}}}});
  EXPECT_CONTAINS(msg, "3 problems");
  EXPECT_CONTAINS(msg, "optimizer.params.local_step_clipper");
  EXPECT_CONTAINS(msg, "unknown key 'optimizer.params.freeze_step'");
  EXPECT_CONTAINS(msg, "optimizer.type = ZeroOneAdam needs zero_optimization.stage 0, not 1");
}

TEST(ConfigLamb, BadParametersAllAtOnce) {
  const json lamb = {{"type", "Lamb"}, {"params", {{"max_coeff", 0.5}, {"min_coeff", 2.0}, {"amsgrad", true}, {"max_grad_norm", 1.0},
                                                   {"adam_w_mode", true}}}};
  const std::string msg = error_of({{"train_batch_size", 8}, {"optimizer", lamb}});
  EXPECT_CONTAINS(msg, "4 problems");
  EXPECT_CONTAINS(msg, "optimizer.params.min_coeff is 2; the trust ratio's lower clamp must be in [0, max_coeff = 0.5]");
  EXPECT_CONTAINS(msg, "optimizer.params.amsgrad = true is known but not supported yet");
  EXPECT_CONTAINS(msg, "optimizer.params.max_grad_norm = 1.0 is known but not supported yet");
  EXPECT_CONTAINS(msg, "optimizer.params.adam_w_mode");
}

// ---- "auto" ----

TEST(ConfigAuto, TrainerFileResolvesFromZerosSettings) {
  json j = read_config_file(fixture("corpus/hf_ds_config_zero2.json"));
  j.erase("fp16"), j.erase("bf16");  // their "auto" waits for mixed precision (README)
  apply_override(j, "train_micro_batch_size_per_gpu", 4);  // what --micro-batch 4 does
  const TrainConfig c = parse_config(j, 2);
  EXPECT_EQ(c.micro_batch_size, 4);
  EXPECT_EQ(c.gradient_accumulation_steps, 1);
  EXPECT_EQ(c.train_batch_size, 8);
  EXPECT_FLOAT_EQ(c.engine.adam.lr, 1e-3f);
  EXPECT_FLOAT_EQ(c.engine.adam.beta1, 0.9f);
  EXPECT_FLOAT_EQ(c.engine.adam.beta2, 0.999f);
  EXPECT_FLOAT_EQ(c.engine.adam.eps, 1e-8f);
  EXPECT_FLOAT_EQ(c.engine.adam.weight_decay, 0.0f);
  EXPECT_DOUBLE_EQ(c.scheduler.warmup_min_lr, 0.0);
  EXPECT_DOUBLE_EQ(*c.scheduler.warmup_max_lr, static_cast<double>(1e-3f));
  EXPECT_EQ(c.scheduler.warmup_num_steps, 1000);
  EXPECT_FLOAT_EQ(c.engine.gradient_clipping, 0.0f);
  for (const char* line : {"optimizer.params.lr = \"auto\" -> 0.001 (zero's default",
                           "optimizer.params.betas = \"auto\" -> [0.9, 0.999]",
                           "scheduler.params.warmup_max_lr = \"auto\" -> 0.001 (the optimizer's lr",
                           "train_batch_size = \"auto\" -> 8 (train_micro_batch_size_per_gpu * gradient_accumulation_steps * world size = 4 * 1 * 2)",
                           "gradient_accumulation_steps = \"auto\" -> 1", "gradient_clipping = \"auto\" -> 0.0 (zero's default: off"}) {
    EXPECT_TRUE(has_line(c.auto_values, line)) << line;
  }
  EXPECT_EQ(c.auto_values.size(), 10u);  // the eleventh, the micro-batch, came from the flag
}

TEST(ConfigAuto, BucketSizesFromTheHiddenSizeAsTheTrainerComputesThem) {
  const json j = {{"train_batch_size", 8}, {"model", {{"n_embd", 64}, {"n_head", 4}}},
                  {"zero_optimization", {{"stage", 3}, {"reduce_bucket_size", "auto"}, {"stage3_prefetch_bucket_size", "auto"},
                                         {"stage3_param_persistence_threshold", "auto"}}}};
  const TrainConfig c = parse_config(j, 1);
  EXPECT_EQ(c.engine.reduce_bucket_elements, std::size_t{64 * 64});
  EXPECT_EQ(c.engine.stage3.prefetch_bucket, 3686);  // int(0.9 * 64 * 64)
  EXPECT_EQ(c.engine.stage3.persistence_threshold, 640);
  EXPECT_TRUE(has_line(c.auto_values, "zero_optimization.reduce_bucket_size = \"auto\" -> 4096 (hidden size 64 squared"));
}

// zero estimate's reading: the engine's settings by parse_config's own readers, the batch left
// unchecked (the file's batch does not split over 3 ranks), "auto" sizes from the planned
// model's hidden size or, with none known, as if absent.
TEST(ConfigEngineSettings, TheSettingsParseConfigReadsWithoutTheBatch) {
  const json j = {{"train_batch_size", 8}, {"gradient_clipping", 0.5}, {"bf16", {{"enabled", true}}},
                  {"optimizer", {{"type", "Lamb"}, {"params", {{"lr", 0.02}}}}},
                  {"zero_optimization", {{"stage", 3}, {"reduce_bucket_size", "auto"}, {"offload_optimizer", {{"device", "cpu"}}},
                                         {"stage3_max_reuse_distance", 7}}}};
  const EngineSettings s = parse_engine_settings(j, 3, 64);
  const EngineSettings t = parse_config(j, 2).engine;  // the same file for training, where the batch splits
  EXPECT_EQ(s.stage, 3);
  EXPECT_TRUE(s.offload.optimizer);
  EXPECT_EQ(s.reduce_bucket_elements, std::size_t{64 * 64});
  EXPECT_EQ(s.stage3.max_reuse_distance, 7);
  EXPECT_EQ(s.precision.compute, Dtype::kBf16);
  EXPECT_EQ(s.optimizer, OptimizerKind::kLamb);
  EXPECT_FLOAT_EQ(s.adam.lr, 0.02f);
  EXPECT_FLOAT_EQ(s.gradient_clipping, 0.5f);
  EXPECT_EQ(t.reduce_bucket_elements, std::size_t{128 * 128});  // the default model's hidden size
  EXPECT_EQ(t.stage3.max_reuse_distance, s.stage3.max_reuse_distance);
  EXPECT_EQ(parse_engine_settings(j, 3, 0).reduce_bucket_elements, std::size_t{500'000'000});  // no model: DeepSpeed's default
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"zero_optimization", {{"stage", 2}, {"overlap_com", false}}}}),
                  "unknown key 'zero_optimization.overlap_com'");
  try {
    parse_engine_settings({{"zero_optimization", {{"stage", 2}, {"overlap_com", false}}}}, 3, 0);
    FAIL() << "a typo was read as absent";
  } catch (const ConfigError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "unknown key 'zero_optimization.overlap_com'");
  }
}

// The engine's one validation (settings_problems) runs when the file is read, each problem under
// its key, with the file's other problems: a combination the engine refuses never reaches it.
TEST(ConfigEngineSettings, CombinationsTheEngineRefusesAreConfigErrors) {
  const json dpu = {{"device", "cpu"}, {"delayed_update", {{"enabled", true}}}};
  const std::string msg = error_of({{"train_batch_size", 8}, {"fp16", {{"enabled", true}}}, {"gradient_clipping", -1},
                                    {"zero_optimization", {{"stage", 3}, {"offload_optimizer", dpu}, {"offload_param", {{"device", "cpu"}}}}}});
  EXPECT_CONTAINS(msg, "3 problems");
  EXPECT_CONTAINS(msg, "zero_optimization.offload_optimizer.delayed_update with offload_param is not supported yet");
  EXPECT_CONTAINS(msg, "fp16.loss_scale = 0 (dynamic loss scaling) with the delayed update is not supported yet");
  EXPECT_CONTAINS(msg, "gradient_clipping is -1; it must be >= 0 (0 turns clipping off)");
}

TEST(ConfigAuto, SchedulerAndBatchFromTheRun) {
  const json sched = {{"type", "WarmupDecayLR"}, {"params", {{"total_num_steps", "auto"}, {"warmup_num_steps", 5}}}};
  const TrainConfig c = parse_config({{"train_batch_size", 32}, {"train_micro_batch_size_per_gpu", "auto"},
                                      {"gradient_accumulation_steps", "auto"}, {"train_steps", 50}, {"scheduler", sched}},
                                     4);
  EXPECT_EQ(c.scheduler.total_num_steps, 50);
  EXPECT_EQ(c.micro_batch_size, 8);
  EXPECT_EQ(c.gradient_accumulation_steps, 1);
  const TrainConfig d = parse_config({{"train_batch_size", "auto"}, {"train_micro_batch_size_per_gpu", 2}, {"gradient_accumulation_steps", 3}}, 2);
  EXPECT_EQ(d.train_batch_size, 12);
}

TEST(ConfigAuto, WhereTheTrainerWouldNotFillItEither) {
  EXPECT_CONTAINS(error_of({{"train_micro_batch_size_per_gpu", "auto"}, {"gradient_accumulation_steps", "auto"}}),
                  "train_micro_batch_size_per_gpu is \"auto\" and no other batch key gives the micro-batch: give --micro-batch N");
  EXPECT_CONTAINS(error_of({{"train_batch_size", "auto"}}), "train_batch_size is \"auto\" and no other batch key gives the micro-batch");
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"zero_optimization", {{"allgather_bucket_size", "auto"}}}}),
                  "zero_optimization.allgather_bucket_size is \"auto\", a Hugging Face Trainer placeholder, but the Trainer does not fill in this key either");
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"scheduler", {{"type", "WarmupCosineLR"}, {"params", {{"cos_min_ratio", "auto"}}}}}}),
                  "scheduler.params.cos_min_ratio is \"auto\"");
}

// ---- Unknown keys ----

TEST(ConfigUnknown, TopLevelKeysDeepSpeedIgnoresAreAcceptedWithAWarning) {
  const json j = {{"train_batch_size", 8}, {"_comment", "from our wiki"}, {"cuda_visible_devices", 0}, {"comms_config", {{"verbose", false}}}};
  const TrainConfig c = parse_config(j, 1);
  const std::vector<std::string> want = {"_comment", "comms_config", "cuda_visible_devices"};
  EXPECT_EQ(c.unknown_keys, want);
  ConfigOptions strict;
  strict.strict = true;
  const std::string msg = error_of(j, 1, strict);
  EXPECT_CONTAINS(msg, "3 problems");
  EXPECT_CONTAINS(msg, "unknown key 'cuda_visible_devices'; it is not a DeepSpeed key (--strict-config refuses unknown top-level keys)");
  EXPECT_CONTAINS(msg, "unknown key '_comment'");
}

TEST(ConfigUnknown, TyposAreAlwaysErrors) {
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"gradient_acumulation_steps", 2}}),
                  "unknown key 'gradient_acumulation_steps'; did you mean 'gradient_accumulation_steps'?");
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"zero_optimisation", {{"stage", 2}}}}), "did you mean 'zero_optimization'?");
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"zero_optimization", {{"_comment", "x"}}}}), "unknown key 'zero_optimization._comment'");
}

// ---- Adam's DeepSpeed parameters ----

TEST(ConfigAdam, BiasCorrectionAndTorchAdam) {
  auto adam = [](const json& params) { return parse_config({{"train_batch_size", 8}, {"optimizer", {{"type", "Adam"}, {"params", params}}}}, 1).engine.adam; };
  EXPECT_FALSE(adam({{"bias_correction", false}}).bias_correction);
  EXPECT_TRUE(adam(json::object()).bias_correction);
  const AdamConfig torch = adam({{"torch_adam", true}, {"lr", 3e-4}}), fused = adam({{"lr", 3e-4}});
  EXPECT_EQ(torch.lr, fused.lr);
  EXPECT_EQ(torch.decoupled, fused.decoupled);
  EXPECT_EQ(torch.bias_correction, fused.bias_correction);
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"optimizer", {{"type", "Adam"}, {"params", {{"torch_adam", true}, {"bias_correction", false}}}}}}),
                  "optimizer.params.bias_correction is not a parameter of PyTorch's Adam");
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"optimizer", {{"type", "Adam"}, {"params", {{"lr", 1e39}}}}}}),
                  "optimizer.params.lr is 1e+39, beyond the range of a 32-bit float");
}

TEST(ConfigAdam, PrescaleAndPredivideAsDeepSpeedsEngine) {
  auto predivide = [](const json& j, int world) { return parse_config(j, world).engine.gradient_predivide_factor; };
  EXPECT_EQ(predivide({{"train_batch_size", 12}}, 3), 1.0);
  EXPECT_EQ(predivide({{"train_batch_size", 12}, {"prescale_gradients", true}}, 3), 3.0);  // divided by the world size first
  EXPECT_EQ(predivide({{"train_batch_size", 12}, {"prescale_gradients", true}, {"gradient_predivide_factor", 8}}, 3), 3.0);
  EXPECT_EQ(predivide({{"train_batch_size", 12}, {"gradient_predivide_factor", 8}}, 3), 8.0);
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"gradient_predivide_factor", 0}}), "gradient_predivide_factor is 0; it must be a positive number");
}

// offload_param alone, as DeepSpeed allows: the parameters' home on the host, the optimizer on the device.
TEST(ConfigAdam, ParameterOffloadAloneLoads) {
  const json z = {{"stage", 3}, {"offload_param", {{"device", "cpu"}, {"pin_memory", true}}}};
  const TrainConfig c = parse_config({{"train_batch_size", 8}, {"zero_optimization", z}}, 1);
  EXPECT_TRUE(c.engine.offload.params);
  EXPECT_FALSE(c.engine.offload.optimizer);
  const json z2 = {{"stage", 2}, {"offload_param", {{"device", "cpu"}}}};
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"zero_optimization", z2}}), "offloads parameters, which only stage 3 shards");
}

// ---- Input that must not crash the reader ----

TEST(ConfigBounds, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_CONTAINS(load_error(write_temp("deep.json", "{\"train_batch_size\": " + deep + "}")),
                  "nested more than 64 deep (at 'train_batch_size')");
  json j = json::object();
  json* node = &j;
  for (int i = 0; i < 100000; ++i) node = &((*node)["a"] = json::object());
  EXPECT_CONTAINS(error_of(j), "nests objects or arrays more than 64 deep");
  json k = {{"train_batch_size", 8}};
  EXPECT_THROW(apply_override(k, "x=" + deep), ConfigError);
}

TEST(ConfigBounds, NumbersBeyondADoubleNameTheirKey) {
  EXPECT_CONTAINS(load_error(write_temp("big.json", R"({"train_batch_size": 8, "optimizer": {"params": {"lr": 1e400}}})")),
                  "key 'optimizer.params.lr' has the number 1e400, beyond the range of a double");
  EXPECT_CONTAINS(load_error(write_temp("digits.json", "{\"zero_optimization\": {\"reduce_bucket_size\": " + std::string(30000, '9') + "}}")),
                  "key 'zero_optimization.reduce_bucket_size' has the number 999");
  json j = {{"train_batch_size", 8}};
  try {
    apply_override(j, "gradient_clipping=1e400");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_CONTAINS(e.what(), "override gradient_clipping: the number 1e400 is beyond the range of a double");
  }
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"zero_optimization", {{"reduce_bucket_size", 1e300}}}}),
                  "reduce_bucket_size is 1e+300, too large for an integer");
}

TEST(ConfigBounds, ByteSizesWithTensOfThousandsOfDigits) {
  EXPECT_THROW(parse_byte_size(std::string(30000, '7') + "GiB", "device_memory"), ConfigError);
  EXPECT_THROW(parse_byte_size("1e99999", "--device-memory"), ConfigError);
  EXPECT_THROW(parse_byte_size("1e-99999", "--device-memory"), ConfigError);
  EXPECT_THROW(parse_bandwidth("1e4000", "--link"), ConfigError);
  EXPECT_EQ(parse_byte_size("2GiB", "x"), 2ull << 30);
}

// Every value of every corpus file replaced, one at a time, by each odd value: the reader either
// accepts the result or refuses it with a ConfigError, never another exception (nlohmann's
// type_error, std::out_of_range, a check failure).
void replace_each(const json& doc, json& node, const std::function<void()>& check, int depth) {
  if (!node.is_object() || depth > 3) return;
  static const json kOdd[] = {nullptr, "auto", -1, 0, 1e300, -1e300, 18446744073709551615ull, json::array(), json::object(),
                              "x", true, json::array({1, "a", nullptr}), 0.5};
  for (auto& [key, value] : node.items()) {
    const json saved = value;
    for (const json& odd : kOdd) {
      value = odd;
      check();
    }
    value = saved;
    replace_each(doc, value, check, depth + 1);
  }
}

TEST(ConfigBounds, OddValuesAnywhereGiveConfigErrorsOnly) {
  int parsed = 0, refused = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fixture("corpus"))) {
    if (entry.path().extension() != ".json") continue;
    json doc = read_config_file(entry.path().string());
    auto check = [&] {
      try {
        parse_config(doc, 2);
        ++parsed;
      } catch (const ConfigError& e) {
        ++refused;
        EXPECT_EQ(std::string(e.what()).rfind("[config] ", 0), 0u) << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << entry.path().filename() << ": " << typeid(e).name() << ": " << e.what() << "\n" << doc.dump();
      }
    };
    replace_each(doc, doc, check, 0);
  }
  EXPECT_GT(refused, 1000);
  std::printf("[ measured ] %d mutated corpus configs: %d accepted, %d refused with a [config] error, none with another\n",
              parsed + refused, parsed, refused);
}

}  // namespace
}  // namespace zero
