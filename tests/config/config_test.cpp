// The config layer: DeepSpeed's example files parse, every bad input gets its message, batch sizes
// resolve as DeepSpeed resolves them, and the schedules give DeepSpeed's numbers.
#include "config/config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "config/config_test_util.h"

namespace zero {
namespace {

using nlohmann::json;

using namespace config_test;

// A small valid config, to which each test adds one bad thing.
json base() { return json{{"train_batch_size", 8}}; }

json with(json j, const std::string& dotted, const json& value) {
  apply_override(j, dotted, value);
  return j;
}

// ---- DeepSpeed's documented ZeRO configs, fp16 disabled ----

TEST(ConfigFiles, Stage1TutorialExample) {
  const TrainConfig c = load_config(fixture("ds_zero_stage1.json"), 2);
  EXPECT_EQ(c.engine.stage, 1);
  EXPECT_EQ(c.engine.reduce_bucket_elements, std::size_t{500'000'000});  // 5e8, a float in JSON
  EXPECT_EQ(c.train_batch_size, 8);
  EXPECT_EQ(c.micro_batch_size, 4);
  EXPECT_EQ(c.gradient_accumulation_steps, 1);
  EXPECT_EQ(c.optimizer_type, "Adam");
  EXPECT_TRUE(c.engine.adam.decoupled);  // DeepSpeed's adam_w_mode defaults to true for type Adam
  EXPECT_FLOAT_EQ(c.engine.adam.lr, 0.001f);
  EXPECT_FLOAT_EQ(c.engine.adam.beta1, 0.8f);
  EXPECT_FLOAT_EQ(c.engine.adam.beta2, 0.999f);
  EXPECT_FLOAT_EQ(c.engine.adam.weight_decay, 3e-7f);
  EXPECT_EQ(c.scheduler.type, ScheduleType::warmup);
  EXPECT_EQ(c.scheduler.warmup_num_steps, 1000);
  EXPECT_FALSE(c.fp16());
  EXPECT_TRUE(c.engine.overlap_comm);  // zero overlaps in every stage by default (DeepSpeed: stage 3 only)
}

TEST(ConfigFiles, Stage2TutorialExample) {
  const TrainConfig c = load_config(fixture("ds_zero_stage2.json"), 2);
  EXPECT_EQ(c.engine.stage, 2);
  EXPECT_TRUE(c.engine.overlap_comm);
  EXPECT_EQ(c.engine.allgather_bucket_elements, std::size_t{500'000'000});
  EXPECT_EQ(c.ignored_keys, std::vector<std::string>{"zero_optimization.reduce_scatter"});
}

TEST(ConfigFiles, Stage2With2e8Buckets) {
  const TrainConfig c = load_config(fixture("ds_zero_stage2_2e8.json"), 4);
  EXPECT_EQ(c.engine.stage, 2);
  EXPECT_EQ(c.engine.reduce_bucket_elements, std::size_t{200'000'000});
  EXPECT_EQ(c.engine.allgather_bucket_elements, std::size_t{200'000'000});
  EXPECT_EQ(c.micro_batch_size, 2);  // 16 / (2 accumulation * 4 ranks)
  EXPECT_FLOAT_EQ(c.engine.gradient_clipping, 1.0f);
  EXPECT_EQ(c.steps_per_print, 2000);
  EXPECT_EQ(c.optimizer_type, "AdamW");
  EXPECT_EQ(c.scheduler.type, ScheduleType::warmup_decay);
  EXPECT_EQ(c.scheduler.total_num_steps, 10000);
}

TEST(ConfigFiles, Stage2OffloadTutorialExample) {
  const TrainConfig c = load_config(fixture("ds_zero_stage2_offload.json"), 1);
  EXPECT_EQ(c.engine.stage, 2);
  EXPECT_TRUE(c.engine.offload.optimizer);  // parsed; the engine decides
  EXPECT_FALSE(c.engine.offload.params);
  EXPECT_EQ(c.train_batch_size, 10);
}

TEST(ConfigFiles, Stage3InfinityTutorialExample) {
  const TrainConfig c = load_config(fixture("ds_zero_stage3_offload.json"), 8);
  EXPECT_EQ(c.engine.stage, 3);
  EXPECT_TRUE(c.engine.overlap_comm);  // DeepSpeed's default for stage 3
  EXPECT_EQ(c.engine.stage3.max_live, 1'000'000'000);
  EXPECT_EQ(c.engine.stage3.max_reuse_distance, 1'000'000'000);
  EXPECT_EQ(c.engine.stage3.prefetch_bucket, 10'000'000);
  EXPECT_EQ(c.engine.stage3.persistence_threshold, 100'000);
  EXPECT_EQ(c.engine.reduce_bucket_elements, std::size_t{10'000'000});
  EXPECT_TRUE(c.engine.offload.optimizer);
  EXPECT_TRUE(c.engine.offload.params);
  EXPECT_EQ(c.gradient_accumulation_steps, 1);
}

// ZeRO-Infinity's optimizer offload as DeepSpeed's docs write it: the keys the NVMe tier reads,
// and DeepSpeed's defaults where a key is absent.
TEST(ConfigFiles, NvmeOptimizerOffload) {
  json j = with(base(), "zero_optimization", {{"stage", 3}, {"sub_group_size", 1e8},
                                              {"offload_optimizer", {{"device", "nvme"}, {"nvme_path", "/local_nvme"}, {"pin_memory", true},
                                                                     {"buffer_count", 5}, {"pipeline_read", false}, {"fast_init", false}}}});
  j["aio"] = {{"block_size", 262144}, {"queue_depth", 32}, {"thread_count", 1}, {"single_submit", false}, {"overlap_events", true}};
  const OffloadOptions o = parse_config(j, 1).engine.offload;
  EXPECT_TRUE(o.optimizer);
  EXPECT_TRUE(o.optimizer_nvme);
  EXPECT_EQ(o.nvme.path, "/local_nvme");
  EXPECT_EQ(o.nvme.buffer_count, 5);
  EXPECT_EQ(o.nvme.sub_group_size, std::size_t{100'000'000});
  EXPECT_EQ(o.nvme.block_size, std::size_t{262144});
  EXPECT_EQ(o.nvme.queue_depth, 32);
  const OffloadOptions d = parse_config(with(base(), "zero_optimization", {{"stage", 2}, {"offload_optimizer", {{"device", "nvme"}, {"nvme_path", "/x"}}}}), 1)
                               .engine.offload;
  EXPECT_EQ(d.nvme.buffer_count, 4);
  EXPECT_EQ(d.nvme.sub_group_size, std::size_t{1'000'000'000});
  EXPECT_EQ(d.nvme.block_size, std::size_t{1'048'576});
  EXPECT_EQ(d.nvme.queue_depth, 8);
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization", {{"stage", 0}, {"offload_optimizer", {{"device", "nvme"}, {"nvme_path", "/x"}}}})),
                  "needs ZeRO stage 1, 2 or 3");
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization", {{"stage", 2}, {"offload_optimizer", {{"device", "nvme"}}}})),
                  "zero_optimization.offload_optimizer.nvme_path is missing");
}

// ZeRO-Infinity's parameter offload as DeepSpeed's docs write it (1e8 and 1e9 as numbers), its
// defaults, and what is refused: a stage that does not shard parameters, the optimizer elsewhere.
TEST(ConfigFiles, NvmeParamOffload) {
  const json nvme_optimizer = {{"device", "nvme"}, {"nvme_path", "/opt_nvme"}};
  const json param = {{"device", "nvme"}, {"nvme_path", "/param_nvme"}, {"pin_memory", true}, {"buffer_count", 6}, {"buffer_size", 2e8}, {"max_in_cpu", 3e9}};
  const OffloadOptions o =
      parse_config(with(base(), "zero_optimization", {{"stage", 3}, {"offload_optimizer", nvme_optimizer}, {"offload_param", param}}), 1).engine.offload;
  EXPECT_TRUE(o.params && o.params_nvme && o.pin_memory);
  EXPECT_EQ(o.nvme.path, "/opt_nvme");
  EXPECT_EQ(o.param_nvme.path, "/param_nvme");
  EXPECT_EQ(o.param_nvme.buffer_count, 6);
  EXPECT_EQ(o.param_nvme.buffer_size, std::size_t{200'000'000});
  EXPECT_EQ(o.param_nvme.max_in_cpu, std::size_t{3'000'000'000});
  const OffloadOptions d = parse_config(with(base(), "zero_optimization", {{"stage", 3}, {"offload_optimizer", nvme_optimizer},
                                                                           {"offload_param", {{"device", "nvme"}, {"nvme_path", "/p"}}}}), 1)
                               .engine.offload;
  EXPECT_EQ(d.param_nvme.buffer_count, 5);
  EXPECT_EQ(d.param_nvme.buffer_size, std::size_t{100'000'000});
  EXPECT_EQ(d.param_nvme.max_in_cpu, std::size_t{1'000'000'000});
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization", {{"stage", 2}, {"offload_optimizer", nvme_optimizer}, {"offload_param", param}})),
                  "offload_param offloads parameters, which only stage 3 shards; stage is 2");
  EXPECT_TRUE(parse_config(with(base(), "zero_optimization", {{"stage", 3}, {"offload_optimizer", {{"device", "cpu"}}}, {"offload_param", param}}), 1)
                  .engine.offload.params_nvme);
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization", {{"stage", 3}, {"offload_param", param}})),
                  "offload_param.device = \"nvme\" needs offload_optimizer.device \"cpu\" or \"nvme\" too");
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization", {{"stage", 3}, {"offload_optimizer", nvme_optimizer}, {"offload_param", {{"device", "nvme"}}}})),
                  "zero_optimization.offload_param.nvme_path is missing");
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization", {{"stage", 3}, {"offload_optimizer", nvme_optimizer},
                                                              {"offload_param", {{"device", "nvme"}, {"nvme_path", "/p"}, {"buffer_size", 0}}}})),
                  "buffer_size");
}

TEST(ConfigFiles, Stage3ConfigJsonExample) {
  const TrainConfig c = load_config(fixture("ds_zero_stage3.json"), 2);
  EXPECT_EQ(c.engine.stage, 3);
  EXPECT_EQ(c.engine.stage3.prefetch_bucket, 940'000);
  EXPECT_FALSE(c.engine.offload.params);
  EXPECT_EQ(c.scheduler.type, ScheduleType::warmup_cosine);
  EXPECT_EQ(c.scheduler.warmup_type, WarmupType::linear);
  EXPECT_FLOAT_EQ(c.engine.adam.beta2, 0.95f);
  const std::vector<std::string> ignored = {"wall_clock_breakdown", "zero_optimization.stage3_gather_16bit_weights_on_model_save"};
  EXPECT_EQ(c.ignored_keys, ignored);
}

// ---- The file itself ----

TEST(ConfigFile, SyntaxErrorNamesFileLineAndColumn) {
  // Line 3 has a trailing comma; the parser notices at the '}' on line 4, column 1.
  const std::string path = write_temp("syntax.json", "{\n  \"train_batch_size\": 8,\n  \"steps_per_print\": 5,\n}\n");
  const std::string msg = load_error(path);
  EXPECT_CONTAINS(msg, "[config] ");
  EXPECT_CONTAINS(msg, path + ":4:1: JSON syntax error");
  EXPECT_CONTAINS(msg, "trailing comma");
}

TEST(ConfigFile, SyntaxErrorColumnInsideALine) {
  const std::string path = write_temp("syntax2.json", "{\n  \"zero_optimization\": {\"stage\": 2 \"x\": 1}\n}\n");
  // The unexpected token is the string "x" where a ',' should be; like nlohmann's own message, the
  // column is that of the token's last character.
  EXPECT_CONTAINS(load_error(path), path + ":2:38:");
}

TEST(ConfigFile, MissingFile) {
  const std::string msg = load_error("/nonexistent/ds_config.json");
  EXPECT_CONTAINS(msg, "[config] config file '/nonexistent/ds_config.json' does not exist");
  EXPECT_CONTAINS(load_error(write_temp("empty.json", "\n")), "is empty");
}

TEST(ConfigFile, DuplicateKey) {
  const std::string path = write_temp("dup.json", R"({"train_batch_size": 8, "zero_optimization": {"stage": 1, "stage": 2}})");
  EXPECT_CONTAINS(load_error(path), "key 'zero_optimization.stage' appears twice");
}

// ---- Unknown, unsupported and wrongly typed keys ----

TEST(ConfigKeys, UnknownKeyNamesPathAndNearestKey) {
  const std::string msg = error_of(with(base(), "zero_optimization", {{"stgae", 2}}));
  EXPECT_CONTAINS(msg, "unknown key 'zero_optimization.stgae'");
  EXPECT_CONTAINS(msg, "did you mean 'zero_optimization.stage'?");
  EXPECT_CONTAINS(error_of(with(base(), "train_micro_batch_size", 2)), "did you mean 'train_micro_batch_size_per_gpu'?");
  const json adam = {{"type", "AdamW"}, {"params", {{"weight_decy", 0.1}}}};
  EXPECT_CONTAINS(error_of(with(base(), "optimizer", adam)), "did you mean 'optimizer.params.weight_decay'?");
  EXPECT_CONTAINS(error_of(with(base(), "scheduler", {{"type", "WarmupCosineLR"}, {"params", {{"warmup_min_lr", 0}}}})),
                  "unknown key 'scheduler.params.warmup_min_lr'; did you mean 'scheduler.params.warmup_min_ratio'?");
}

TEST(ConfigKeys, FarFromAnyKeyListsTheKnownKeys) {
  const std::string msg = error_of(with(base(), "data", {{"filename", "x.txt"}}));
  EXPECT_CONTAINS(msg, "unknown key 'data.filename'");
  EXPECT_CONTAINS(msg, "The keys known in 'data' are: path, val_path, format, tokenizer, val_fraction, seed.");
}

TEST(ConfigKeys, KnownButUnsupported) {
  EXPECT_CONTAINS(error_of(with(base(), "fp16", {{"enabled", true}, {"fp16_master_weights_and_grads", true}})),
                  "fp16.fp16_master_weights_and_grads = true is known but not supported yet");
  EXPECT_CONTAINS(error_of(with(base(), "bf16", {{"enabled", true}, {"bf16_optimizer_states", true}})),
                  "bf16.bf16_optimizer_states = true is known but not supported yet");
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization.zero_quantized_weights", true)),
                  "zero_optimization.zero_quantized_weights = true is known but not supported yet: ZeRO++");
  EXPECT_CONTAINS(error_of(with(base(), "aio.use_gds", true)), "aio.use_gds = true is known but not supported yet: GPUDirect Storage");
  EXPECT_CONTAINS(error_of(with(base(), "sparse_attention.mode", "fixed")),
                  "sparse_attention = {\"mode\":\"fixed\"} is known but not supported yet");
  EXPECT_CONTAINS(error_of(with(base(), "sparse_gradients", true)), "set it to false or remove it");
  EXPECT_CONTAINS(error_of(with(base(), "optimizer", {{"type", "Adam"}, {"params", {{"amsgrad", true}}}})),
                  "optimizer.params.amsgrad = true is known but not supported yet");
  EXPECT_CONTAINS(error_of(with(base(), "optimizer.type", "OneBitLamb")), "optimizer.type \"OneBitLamb\" is known but not supported yet");
  EXPECT_CONTAINS(error_of(with(base(), "scheduler.type", "OneCycle")), "scheduler.type \"OneCycle\" is known but not supported yet");
  EXPECT_CONTAINS(error_of(with(base(), "amp.enabled", true)), "amp is known but not supported yet");
  EXPECT_CONTAINS(error_of(with(base(), "communication_data_type", "bf16")),
                  "communication_data_type = \"bf16\" is known but not supported yet: zero reduces gradients and gathers "
                  "parameters in the training type (fp32 here)");
}

TEST(ConfigKeys, NoOpValuesOfUnsupportedKeysAreAccepted) {
  json j = base();
  j["prescale_gradients"] = false;
  j["gradient_predivide_factor"] = 1;  // 1 == 1.0
  j["amp"] = {{"enabled", false}, {"opt_level", "O1"}};
  j["communication_data_type"] = nullptr;
  j["zero_optimization"] = {{"stage", 2}, {"zero_quantized_gradients", false}, {"zero_hpz_partition_size", 1}};
  j["fp16"] = {{"enabled", false}, {"loss_scale_window", 100}};
  const TrainConfig c = parse_config(j, 1);
  EXPECT_EQ(c.engine.stage, 2);
  const std::vector<std::string> ignored = {"amp", "fp16.loss_scale_window"};
  EXPECT_EQ(c.ignored_keys, ignored);
}

TEST(ConfigKeys, WrongTypeNamesPathExpectedTypeAndValue) {
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization.stage", "two")),
                  "[config] zero_optimization.stage must be an integer, found \"two\" (a string)");
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization.reduce_bucket_size", 2.5e8 + 0.5)), "must be an integer, found 250000000.5");
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization.overlap_comm", 1)), "overlap_comm must be a boolean (true or false), found 1");
  EXPECT_CONTAINS(error_of(with(base(), "optimizer", "adam")), "optimizer must be an object, found \"adam\"");
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization.stage", "auto")),
                  "zero_optimization.stage is \"auto\", a Hugging Face Trainer placeholder, but the Trainer does not fill in this key either");
  EXPECT_CONTAINS(error_of(with(base(), "optimizer", {{"type", "AdamW"}, {"params", {{"betas", 0.9}}}})),
                  "optimizer.params.betas must be an array, found 0.9");
  EXPECT_CONTAINS(error_of(json::array({1, 2})), "the config must be a JSON object");
}

// ---- Mixed precision: DeepSpeed's bf16 and fp16 sections ----

TEST(ConfigPrecision, DefaultsAreDeepSpeeds) {
  const TrainConfig off = parse_config(base(), 1);
  EXPECT_FALSE(off.bf16());
  EXPECT_FALSE(off.fp16());
  const TrainConfig bf16 = parse_config(with(base(), "bf16.enabled", true), 1);
  EXPECT_TRUE(bf16.bf16());
  EXPECT_FALSE(bf16.fp16());
  const TrainConfig bfloat16 = parse_config(with(base(), "bfloat16.enabled", true), 1);
  EXPECT_TRUE(bfloat16.bf16());
  const TrainConfig fp16 = parse_config(with(base(), "fp16.enabled", true), 1);
  EXPECT_TRUE(fp16.fp16());
  const LossScalerConfig& l = fp16.engine.precision.loss_scaler;
  EXPECT_TRUE(l.dynamic());
  EXPECT_EQ(l.initial_scale_power, 16);
  EXPECT_EQ(l.window, 1000);
  EXPECT_EQ(l.hysteresis, 2);
  EXPECT_FALSE(l.consecutive_hysteresis);
  EXPECT_EQ(l.min_scale, 1.0);
}

TEST(ConfigPrecision, Fp16LossScalerKeys) {
  const json block = {{"enabled", true}, {"loss_scale", 0}, {"initial_scale_power", 12}, {"loss_scale_window", 500},
                      {"hysteresis", 3}, {"consecutive_hysteresis", true}, {"min_loss_scale", 0.5}};
  const LossScalerConfig l = parse_config(with(base(), "fp16", block), 1).engine.precision.loss_scaler;
  EXPECT_EQ(l.initial_scale_power, 12);
  EXPECT_EQ(l.window, 500);
  EXPECT_EQ(l.hysteresis, 3);
  EXPECT_TRUE(l.consecutive_hysteresis);
  EXPECT_EQ(l.min_scale, 0.5);
  const TrainConfig fixed = parse_config(with(base(), "fp16", {{"enabled", true}, {"loss_scale", 128}}), 1);
  EXPECT_FALSE(fixed.engine.precision.loss_scaler.dynamic());
  EXPECT_EQ(fixed.engine.precision.loss_scaler.static_scale, 128);
}

TEST(ConfigPrecision, BadInputNamesTheKey) {
  EXPECT_CONTAINS(error_of(with(with(base(), "fp16.enabled", true), "bf16.enabled", true)), "fp16 and bf16 are both enabled: choose one");
  EXPECT_CONTAINS(error_of(with(base(), "fp16", {{"enabled", true}, {"loss_scale", -2}})),
                  "[config] fp16.loss_scale is -2; it must be 0 (dynamic loss scaling) or a positive static scale");
  EXPECT_CONTAINS(error_of(with(base(), "fp16", {{"enabled", true}, {"loss_scale", "dynamic"}})), "fp16.loss_scale must be a number");
  EXPECT_CONTAINS(error_of(with(base(), "fp16", {{"enabled", true}, {"initial_scale_power", 4}, {"min_loss_scale", 32}})),
                  "fp16.min_loss_scale is 32, above the initial scale 2^4 = 16");
  EXPECT_CONTAINS(error_of(with(base(), "fp16", {{"enabled", true}, {"hysteresis", 0}})), "fp16.hysteresis");
  EXPECT_CONTAINS(error_of(with(base(), "communication_data_type", "fp8")),
                  "communication_data_type = \"fp8\" is not a data type; DeepSpeed's are \"fp32\", \"fp16\" and \"bf16\"");
  EXPECT_CONTAINS(error_of(with(with(base(), "bf16.enabled", true), "communication_data_type", "fp32")),
                  "communication_data_type = \"fp32\" is known but not supported yet: zero reduces gradients and gathers "
                  "parameters in the training type (bf16 here); set \"bf16\" or remove it");
  EXPECT_CONTAINS(error_of(with(with(base(), "bf16.enabled", true), "data_types.grad_accum_dtype", "fp32")),
                  "data_types.grad_accum_dtype = \"fp32\" is known but not supported yet: zero accumulates gradients");
  EXPECT_CONTAINS(error_of(with(base(), "data_types.grad_accum", "fp32")), "unknown key 'data_types.grad_accum'");
}

TEST(ConfigPrecision, MatchingDataTypesAreAccepted) {
  json j = with(base(), "bf16.enabled", true);
  j["communication_data_type"] = "bf16";
  j["data_types"] = {{"grad_accum_dtype", "bf16"}};
  EXPECT_TRUE(parse_config(j, 1).bf16());
}

// DeepSpeed's documented ZeRO examples with their precision blocks on, as people have them.
TEST(ConfigPrecision, DocumentedExamplesWithFp16OrBf16On) {
  const std::pair<const char*, int> files[] = {{"ds_zero_stage1.json", 2},         {"ds_zero_stage2.json", 2},
                                               {"ds_zero_stage2_2e8.json", 4},     {"ds_zero_stage2_offload.json", 1},
                                               {"ds_zero_stage3.json", 2},         {"ds_zero_stage3_offload.json", 8}};
  for (const auto& [name, world] : files) {
    json j = read_config_file(fixture(name));
    j["fp16"] = {{"enabled", true}, {"loss_scale", 0}, {"loss_scale_window", 1000}, {"hysteresis", 2}, {"min_loss_scale", 1}};
    EXPECT_TRUE(parse_config(j, world).fp16()) << name;
    j.erase("fp16");
    j["bf16"] = {{"enabled", true}};
    EXPECT_TRUE(parse_config(j, world).bf16()) << name;
  }
}

// ---- Values out of range ----

TEST(ConfigValues, StageOutsideZeroToThree) {
  const std::string msg = error_of(with(base(), "zero_optimization.stage", 5));
  EXPECT_CONTAINS(msg, "zero_optimization.stage is 5; ZeRO stages are 0-3");
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization.stage", -1)), "ZeRO stages are 0-3");
}

TEST(ConfigValues, OptimizerParameters) {
  auto adam = [](const std::string& key, const json& v) { return with(base(), "optimizer", {{"type", "AdamW"}, {"params", {{key, v}}}}); };
  EXPECT_CONTAINS(error_of(adam("lr", -0.1)), "optimizer.params.lr is -0.1; the learning rate must be >= 0");
  EXPECT_CONTAINS(error_of(adam("betas", {0.9, 1.0})), "optimizer.params.betas [1] is 1; each beta must be in [0, 1)");
  EXPECT_CONTAINS(error_of(adam("betas", {-0.1, 0.9})), "[0] is -0.1");
  // Below 1 as written, but 1 in the optimizer's 32-bit float: refused here, naming the key, not
  // later as "beta2 must be in [0, 1), not 1". The largest float below 1 is accepted.
  EXPECT_CONTAINS(error_of(adam("betas", {0.9, 0.9999999999})),
                  "optimizer.params.betas [1] is 0.9999999999, which is 1 as a 32-bit float (the optimizer's precision)");
  EXPECT_CONTAINS(error_of(adam("betas", {0.99999998, 0.9})), "[0] is 0.99999998, which is 1 as a 32-bit float");
  const float below_one = std::nextafter(1.0f, 0.0f);  // 0.99999994
  EXPECT_EQ(parse_config(adam("betas", {0.99999997, static_cast<double>(below_one)}), 1).engine.adam.beta2, below_one);
  EXPECT_CONTAINS(error_of(adam("betas", {0.9})), "must be two numbers [beta1, beta2]");
  EXPECT_CONTAINS(error_of(adam("eps", -1e-8)), "eps must be >= 0");
  EXPECT_CONTAINS(error_of(adam("weight_decay", -1)), "weight_decay must be >= 0");
  EXPECT_CONTAINS(error_of(adam("max_grad_norm", 1.0)), "move the value to the top-level \"gradient_clipping\"");
  EXPECT_CONTAINS(error_of(with(base(), "optimizer.type", "SGDM")), "is not an optimizer zero knows");
  EXPECT_CONTAINS(error_of(with(base(), "gradient_clipping", -1)), "gradient_clipping is -1; it must be >= 0");
}

TEST(ConfigValues, AdamDecayMode) {
  auto parse_adam = [](const json& opt) { return parse_config(with(base(), "optimizer", opt), 1); };
  EXPECT_TRUE(parse_adam({{"type", "adam"}}).engine.adam.decoupled);  // case-insensitive, as DeepSpeed
  EXPECT_EQ(parse_adam({{"type", "ADAMW"}}).optimizer_type, "AdamW");
  EXPECT_FALSE(parse_adam({{"type", "Adam"}, {"params", {{"adam_w_mode", false}}}}).engine.adam.decoupled);
  EXPECT_CONTAINS(error_of(with(base(), "optimizer", {{"type", "AdamW"}, {"params", {{"adam_w_mode", false}}}})),
                  "type \"AdamW\" always uses decoupled weight decay");
  EXPECT_TRUE(parse_config(base(), 1).engine.adam.decoupled);  // no optimizer section: AdamW defaults
}

TEST(ConfigValues, OffloadNeedsTheRightStage) {
  EXPECT_CONTAINS(error_of(with(with(base(), "zero_optimization.stage", 2), "zero_optimization.offload_param.device", "cpu")),
                  "only stage 3 shards; stage is 2");
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization.offload_optimizer.device", "cpu")), "needs ZeRO stage 1, 2 or 3");
  EXPECT_CONTAINS(error_of(with(base(), "zero_optimization.offload_optimizer", json::object())), "offload_optimizer.device is missing");
}

TEST(ConfigValues, DeprecatedZeroForms) {
  EXPECT_EQ(parse_config(with(base(), "zero_optimization", true), 1).engine.stage, 1);  // DeepSpeed: true means stage 1
  json j = with(base(), "zero_optimization", {{"stage", 2}, {"cpu_offload", true}, {"cpu_offload_use_pin_memory", true}});
  const TrainConfig c = parse_config(j, 1);
  EXPECT_TRUE(c.engine.offload.optimizer);
  EXPECT_TRUE(c.engine.offload.pin_memory);
  EXPECT_EQ(parse_config(with(base(), "zero_optimization", {{"stage", 3}, {"prefetch_bucket_size", 123}}), 1).engine.stage3.prefetch_bucket, 123);
}

TEST(ConfigValues, ModelAndDataSections) {
  json j = base();
  j["model"] = {{"type", "gpt"}, {"n_ctx", 32}, {"n_embd", 64}, {"n_layer", 2}, {"n_head", 2}};
  j["data"] = {{"path", "war_and_peace.txt"}, {"format", "text"}, {"val_fraction", 0.1}};
  j["seed"] = 7;
  j["train_steps"] = 50;
  const TrainConfig c = parse_config(j, 1);
  EXPECT_EQ(c.model.shape.describe(), "V=256 T=32 C=64 L=2 H=2");
  EXPECT_EQ(c.data.path, "war_and_peace.txt");
  EXPECT_EQ(c.data.format, DataFormat::text);
  EXPECT_DOUBLE_EQ(c.data.val_fraction, 0.1);
  EXPECT_EQ(c.data.seed, 7u);  // the top-level seed when data.seed is unset
  EXPECT_EQ(c.train_steps, 50);
  EXPECT_EQ(parse_config(base(), 1).model.shape.describe(), "V=256 T=64 C=128 L=4 H=4");
  EXPECT_CONTAINS(error_of(with(base(), "model", {{"n_embd", 100}, {"n_head", 3}})), "n_embd (100) must divide by n_head (3)");
  EXPECT_CONTAINS(error_of(with(base(), "model", {{"n_ctx", 8}, {"seq_len", 8}})), "keep one");
  EXPECT_CONTAINS(error_of(with(base(), "data.format", "csv")), "data.format is \"csv\"");
  EXPECT_CONTAINS(error_of(with(base(), "data.val_fraction", 1.0)), "it must be in [0, 1)");
  EXPECT_CONTAINS(error_of(with(base(), "train_steps", 0)), "train_steps must be at least 1, not 0");
}

// ---- Batch sizes: DeepSpeed's rules ----

struct Batch {
  int train, micro, accum;
};

Batch resolve(const json& j, int world) {
  const TrainConfig c = parse_config(j, world);
  return {c.train_batch_size, c.micro_batch_size, c.gradient_accumulation_steps};
}

void expect_batch(const json& j, int world, Batch want) {
  const Batch got = resolve(j, world);
  EXPECT_EQ(got.train, want.train) << j.dump();
  EXPECT_EQ(got.micro, want.micro) << j.dump();
  EXPECT_EQ(got.accum, want.accum) << j.dump();
}

TEST(ConfigBatch, ResolvesAsDeepSpeedDoes) {
  expect_batch({{"train_batch_size", 32}, {"train_micro_batch_size_per_gpu", 4}, {"gradient_accumulation_steps", 2}}, 4, {32, 4, 2});
  expect_batch({{"train_batch_size", 32}, {"train_micro_batch_size_per_gpu", 4}}, 4, {32, 4, 2});      // accumulation inferred
  expect_batch({{"train_batch_size", 32}, {"gradient_accumulation_steps", 2}}, 4, {32, 4, 2});         // micro inferred
  expect_batch({{"train_micro_batch_size_per_gpu", 4}, {"gradient_accumulation_steps", 2}}, 4, {32, 4, 2});  // total inferred
  expect_batch({{"train_batch_size", 32}}, 4, {32, 8, 1});               // one alone: accumulation 1
  expect_batch({{"train_micro_batch_size_per_gpu", 4}}, 4, {16, 4, 1});  // one alone: accumulation 1
}

TEST(ConfigBatch, Mismatches) {
  const json three = {{"train_batch_size", 12}, {"train_micro_batch_size_per_gpu", 4}, {"gradient_accumulation_steps", 1}};
  const std::string msg = error_of(three, 2);
  EXPECT_CONTAINS(msg, "train_batch_size 12 != train_micro_batch_size_per_gpu 4 * gradient_accumulation_steps 1 * world size 2 = 8");
  EXPECT_CONTAINS(msg, "set train_batch_size to 8");
  EXPECT_CONTAINS(error_of({{"train_batch_size", 10}, {"train_micro_batch_size_per_gpu", 4}}, 1),
                  "train_batch_size 10 is not a multiple of train_micro_batch_size_per_gpu 4 * world size 1 = 4");
  EXPECT_CONTAINS(error_of({{"train_batch_size", 12}, {"gradient_accumulation_steps", 5}}, 1),
                  "train_batch_size 12 is not a multiple of gradient_accumulation_steps 5 * world size 1 = 5");
  EXPECT_CONTAINS(error_of({{"train_batch_size", 6}}, 4), "train_batch_size 6 does not split over 4 ranks");
  EXPECT_CONTAINS(error_of({{"gradient_accumulation_steps", 2}}, 1), "set train_batch_size or train_micro_batch_size_per_gpu");
  EXPECT_CONTAINS(error_of(json::object(), 1), "set train_batch_size or train_micro_batch_size_per_gpu");
}

TEST(ConfigBatch, ZeroOrNegative) {
  EXPECT_CONTAINS(error_of({{"train_batch_size", 0}}), "train_batch_size is 0; it must be a positive integer");
  EXPECT_CONTAINS(error_of({{"train_micro_batch_size_per_gpu", -2}}), "train_micro_batch_size_per_gpu is -2; it must be a positive integer");
  EXPECT_CONTAINS(error_of({{"train_batch_size", 8}, {"gradient_accumulation_steps", 0}}), "gradient_accumulation_steps is 0");
  EXPECT_CONTAINS(error_of(base(), 0), "world size must be at least 1");
}

// ---- Schedules: DeepSpeed's formulas, values computed by hand ----

Schedule schedule_of(const json& sched, float lr = 1e-3f) {
  json j = base();
  j["scheduler"] = sched;
  j["optimizer"] = {{"type", "AdamW"}, {"params", {{"lr", lr}}}};
  return parse_config(j, 1).scheduler;
}

void expect_lr(float got, double want) { EXPECT_NEAR(got, want, 1e-6 * std::fabs(want) + 1e-12); }

TEST(ConfigSchedule, WarmupLRLog) {
  // DeepSpeed's config-json example: min 0, max 0.001, 1000 steps, log warm-up.
  const Schedule s = schedule_of({{"type", "WarmupLR"}, {"params", {{"warmup_min_lr", 0}, {"warmup_max_lr", 0.001}, {"warmup_num_steps", 1000}}}});
  expect_lr(s.lr_at(0, 1e-3f), 0.0);    // before DeepSpeed's first scheduler.step(): min lr
  expect_lr(s.lr_at(1, 1e-3f), 0.0);    // last_batch_iteration 0: log(1) = 0
  expect_lr(s.lr_at(2, 1e-3f), 1.0034333188799373e-4);  // 0.001 * log(2) / log(1000)
  expect_lr(s.lr_at(1000, 1e-3f), 1e-3);                // log(1000) / log(1000)
  expect_lr(s.lr_at(5000, 1e-3f), 1e-3);                // then constant
}

TEST(ConfigSchedule, WarmupLRLinearAndDefaults) {
  const Schedule lin = schedule_of({{"type", "WarmupLR"}, {"params", {{"warmup_min_lr", 1e-4}, {"warmup_max_lr", 1e-3}, {"warmup_num_steps", 10}, {"warmup_type", "linear"}}}});
  expect_lr(lin.lr_at(0, 5e-4f), 1e-4);
  expect_lr(lin.lr_at(6, 5e-4f), 5.5e-4);  // 1e-4 + 9e-4 * 5/10
  expect_lr(lin.lr_at(11, 5e-4f), 1e-3);
  // No warmup_max_lr: the optimizer's lr (DeepSpeed's WarmupLR).
  const Schedule def = schedule_of({{"type", "WarmupLR"}, {"params", {{"warmup_num_steps", 4}, {"warmup_type", "linear"}}}}, 3e-4f);
  expect_lr(def.lr_at(3, 3e-4f), 1.5e-4);  // 3e-4 * 2/4
  // warmup_num_steps 1 becomes 2, as in DeepSpeed (max(2, n)).
  const Schedule one = schedule_of({{"type", "WarmupLR"}, {"params", {{"warmup_num_steps", 1}, {"warmup_type", "linear"}, {"warmup_max_lr", 1.0}}}});
  expect_lr(one.lr_at(2, 1.0f), 0.5);
  // Log warm-up with a non-zero floor: 1e-4 + 9e-4 * log(3) / log(5).
  const Schedule lg = schedule_of({{"type", "WarmupLR"}, {"params", {{"warmup_min_lr", 1e-4}, {"warmup_max_lr", 1e-3}, {"warmup_num_steps", 5}}}});
  expect_lr(lg.lr_at(3, 1e-3f), 7.143455750373869e-4);
}

TEST(ConfigSchedule, WarmupDecayLR) {
  const Schedule s = schedule_of({{"type", "WarmupDecayLR"},
                                  {"params", {{"warmup_max_lr", 0.01}, {"warmup_num_steps", 10}, {"warmup_type", "linear"}, {"total_num_steps", 110}}}});
  expect_lr(s.lr_at(1, 1e-3f), 0.0);
  expect_lr(s.lr_at(6, 1e-3f), 0.005);   // warm-up: 0.01 * 5/10
  expect_lr(s.lr_at(11, 1e-3f), 0.01);   // decay starts: (110 - 10) / (110 - 10)
  expect_lr(s.lr_at(61, 1e-3f), 0.005);  // (110 - 60) / 100
  expect_lr(s.lr_at(111, 1e-3f), 0.0);   // the end
  expect_lr(s.lr_at(200, 1e-3f), 0.0);   // clamped at 0
  // WarmupDecayLR's own default warmup_max_lr is 0.001, whatever the optimizer's lr.
  const Schedule def = schedule_of({{"type", "WarmupDecayLR"}, {"params", {{"total_num_steps", 100}, {"warmup_num_steps", 10}}}}, 0.5f);
  EXPECT_DOUBLE_EQ(*def.warmup_max_lr, 0.001);
  expect_lr(def.lr_at(11, 0.5f), 0.001);
  EXPECT_CONTAINS(error_of(with(base(), "scheduler", {{"type", "WarmupDecayLR"}, {"params", json::object()}})),
                  "scheduler.params.total_num_steps is missing");
}

TEST(ConfigSchedule, WarmupCosineLR) {
  const Schedule s = schedule_of({{"type", "WarmupCosineLR"},
                                  {"params", {{"total_num_steps", 110}, {"warmup_num_steps", 10}, {"warmup_min_ratio", 0.1},
                                              {"cos_min_ratio", 0.01}, {"warmup_type", "linear"}}}},
                                 0.1f);
  expect_lr(s.lr_at(0, 0.1f), 0.0);     // DeepSpeed's WarmupCosineLR returns 0 before its first step
  expect_lr(s.lr_at(1, 0.1f), 0.01);    // ratio 0.1 + 0 * 0.9
  expect_lr(s.lr_at(6, 0.1f), 0.055);   // ratio 0.1 + 0.5 * 0.9
  expect_lr(s.lr_at(11, 0.1f), 0.09997557473810371);  // 0.1 * (0.01 + 0.99 * (1 + cos(pi * 1/100)) / 2)
  expect_lr(s.lr_at(60, 0.1f), 0.0505);  // progress 50/100: 0.1 * (0.01 + 0.99 * 0.5)
  expect_lr(s.lr_at(111, 0.1f), 0.001);  // the floor, cos_min_ratio
  expect_lr(s.lr_at(1000, 0.1f), 0.001); // and it stays there
  const Schedule lg = schedule_of({{"type", "WarmupCosineLR"}, {"params", {{"total_num_steps", 5000}}}}, 0.1f);
  expect_lr(lg.lr_at(2, 0.1f), 0.010034333188799373);  // 0.1 * log(2) / log(1000)
}

TEST(ConfigSchedule, NoneAndBadInput) {
  expect_lr(parse_config(base(), 1).scheduler.lr_at(7, 3e-4f), 3e-4);
  EXPECT_CONTAINS(error_of(with(base(), "scheduler.type", "WarmupCosine")), "did you mean \"WarmupCosineLR\"?");
  EXPECT_CONTAINS(error_of(with(base(), "scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_type", "cosine"}}}})),
                  "warmup_type is \"cosine\"; it must be \"log\" or \"linear\"");
  EXPECT_CONTAINS(error_of(with(base(), "scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_num_steps", 0}}}})),
                  "warmup_num_steps must be at least 1, not 0");
  EXPECT_CONTAINS(error_of(with(base(), "scheduler", {{"params", json::object()}})), "scheduler.type is missing");
}

// ---- Command-line overrides ----

TEST(ConfigOverride, SetsNestedKeysAndIsValidatedLikeTheFile) {
  json j = read_config_file(fixture("ds_zero_stage2.json"));
  apply_override(j, "zero_optimization.stage", 3);
  apply_override(j, "optimizer.params.lr=3e-4");
  apply_override(j, "data.path=/tmp/text.txt");  // not JSON: a string
  apply_override(j, "optimizer.params.betas=[0.9,0.95]");
  const TrainConfig c = parse_config(j, 2);
  EXPECT_EQ(c.engine.stage, 3);
  EXPECT_FLOAT_EQ(c.engine.adam.lr, 3e-4f);
  EXPECT_FLOAT_EQ(c.engine.adam.beta2, 0.95f);
  EXPECT_EQ(c.data.path, "/tmp/text.txt");
  apply_override(j, "zero_optimization.stgae=2");
  EXPECT_CONTAINS(error_of(j, 2), "unknown key 'zero_optimization.stgae'");
}

TEST(ConfigOverride, BadOverrides) {
  json j = base();
  try {
    apply_override(j, "train_batch_size.x", 1);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_CONTAINS(e.what(), "'train_batch_size' is 8, not an object");
  }
  EXPECT_THROW(apply_override(j, "zero_optimization..stage", 1), ConfigError);
  EXPECT_THROW(apply_override(j, "no_equals_sign"), ConfigError);
}

}  // namespace
}  // namespace zero
