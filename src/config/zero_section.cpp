// "zero_optimization": DeepSpeed's DeepSpeedZeroConfig (runtime/zero/config.py) and its offload
// blocks (runtime/zero/offload_config.py), with DeepSpeed's defaults.
//
// Every key DeepSpeed knows here is read, ignored, or unsupported:
//
// | key                                            | zero does                                            |
// |------------------------------------------------|------------------------------------------------------|
// | stage, reduce_bucket_size, allgather_bucket_size, overlap_comm, contiguous_gradients,        |
// | stage3_prefetch_bucket_size, stage3_param_persistence_threshold, stage3_max_live_parameters,  |
// | stage3_max_reuse_distance, sub_group_size, offload_optimizer, offload_param, mics_shard_size, |
// | zero_quantized_weights, zero_hpz_partition_size, zero_quantized_gradients (ZeRO++)                       |
// |   (and the unprefixed pydantic names prefetch_bucket_size ... max_reuse_distance), zenflow | read   |
// | cpu_offload, cpu_offload_param, cpu_offload_use_pin_memory (deprecated)  | read, mapped onto the offload blocks as DeepSpeed does |
// | allgather_partitions      | ignored: all-gather vs a series of broadcasts; same values         |
// | reduce_scatter            | ignored: reduce-scatter vs all-reduce; zero's deterministic reduction gives the same average |
// | round_robin_gradients     | ignored: order of gradient copies to the host; same values         |
// | use_multi_rank_bucket_allreduce | ignored: how buckets are grouped into collectives            |
// | stage3_model_persistence_threshold, stage3_module_granularity_threshold, stage3_use_all_reduce_for_fetch_params, |
// | stage3_allgather_sequential, stage3_partition_stream_chunk_size, memory_efficient_linear,    |
// | override_module_apply, leaf_module, parameter_alignment | ignored: when and in what pieces parameters are fetched or padded; same values |
// | stage3_gather_16bit_weights_on_model_save (and its other spellings) | ignored: only how a 16-bit model is saved |
// | load_from_fp32_weights    | ignored: zero trains in fp32, its master weights are the weights    |
// | elastic_checkpoint        | ignored: zero's checkpoints always reshard                          |
// | pipeline_loading_checkpoint | ignored: how a checkpoint is loaded                              |
// | ignore_unused_parameters  | ignored: an error check for unused parameters; zero's models use all |
// | compute_grad_norm         | ignored: zero always computes the global gradient norm              |
// | log_trace_cache_warnings, enable_sanity_checks | ignored: logging and debug checks              |
// | save_muon_momentum_buffer_in_memory | ignored: zero has no Muon                                 |
// | legacy_stage1, zero_quantized_nontrainable_weights,                                          |
// | zeropp_loco_param, mics_hierarchical_params_gather |
// |                           | known but not supported yet unless at the no-op default            |
#include <algorithm>
#include <limits>

#include "common/error.h"
#include "config/reader.h"

namespace zero::config_detail {

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr JsonType kBool = JsonType::boolean, kInt = JsonType::integer, kNum = JsonType::number,
                   kStr = JsonType::string, kObj = JsonType::object;

}  // namespace

std::vector<KeyRule> zero_rules() {
  const Use R = Use::read, I = Use::ignore, U = Use::unsupported;
  const std::string fetch = "when and in what pieces parameters are fetched; the same values arrive";
  const std::string save = "only how a 16-bit model is saved";
  return {
      {"stage", R, kInt, ""},
      {"reduce_bucket_size", R, kInt, ""},
      {"allgather_bucket_size", R, kInt, ""},
      {"overlap_comm", R, kBool, ""},
      {"contiguous_gradients", R, kBool, ""},
      {"stage3_prefetch_bucket_size", R, kInt, ""},
      {"prefetch_bucket_size", R, kInt, ""},
      {"stage3_param_persistence_threshold", R, kInt, ""},
      {"param_persistence_threshold", R, kInt, ""},
      {"stage3_max_live_parameters", R, kInt, ""},
      {"max_live_parameters", R, kInt, ""},
      {"stage3_max_reuse_distance", R, kInt, ""},
      {"max_reuse_distance", R, kInt, ""},
      {"sub_group_size", R, kInt, ""},
      {"offload_optimizer", R, kObj, ""},
      {"offload_param", R, kObj, ""},
      {"cpu_offload", R, kBool, ""},
      {"cpu_offload_param", R, kBool, ""},
      {"cpu_offload_use_pin_memory", R, kBool, ""},
      {"allgather_partitions", I, kBool, "all-gather vs a series of broadcasts; the same values arrive"},
      {"reduce_scatter", I, kBool, "reduce-scatter vs all-reduce; zero's deterministic reduction gives the same average"},
      {"round_robin_gradients", I, kBool, "the order of gradient copies to the host"},
      {"use_multi_rank_bucket_allreduce", I, kBool, "how buckets are grouped into collectives"},
      {"stage3_model_persistence_threshold", I, kInt, fetch},
      {"model_persistence_threshold", I, kInt, fetch},
      {"stage3_module_granularity_threshold", I, kInt, fetch},
      {"module_granularity_threshold", I, kInt, fetch},
      {"stage3_use_all_reduce_for_fetch_params", I, kBool, fetch},
      {"use_all_reduce_for_fetch_params", I, kBool, fetch},
      {"stage3_allgather_sequential", I, kBool, fetch},
      {"allgather_sequential", I, kBool, fetch},
      {"stage3_partition_stream_chunk_size", I, kInt, fetch},
      {"memory_efficient_linear", I, kBool, fetch},
      {"override_module_apply", I, kBool, fetch},
      {"leaf_module", I, kObj, fetch},
      {"parameter_alignment", I, kBool, "padding between parameters in flat buffers"},
      {"stage3_gather_16bit_weights_on_model_save", I, kBool, save},
      {"gather_16bit_weights_on_model_save", I, kBool, save},
      {"stage3_gather_fp16_weights_on_model_save", I, kBool, save},
      {"load_from_fp32_weights", I, kBool, "zero trains in fp32: its master weights are the weights"},
      {"elastic_checkpoint", I, kBool, "zero's checkpoints always reshard"},
      {"pipeline_loading_checkpoint", I, kBool, "how a checkpoint is loaded"},
      {"ignore_unused_parameters", I, kBool, "an error check for unused parameters; zero's models use them all"},
      {"compute_grad_norm", I, kBool, "zero always computes the global gradient norm"},
      {"log_trace_cache_warnings", I, kBool, "logging"},
      {"enable_sanity_checks", I, kBool, "debug checks"},
      {"save_muon_momentum_buffer_in_memory", I, kBool, "zero has no Muon optimizer"},
      {"legacy_stage1", U, kBool, "DeepSpeed's old stage 1", false},
      {"zero_hpz_partition_size", R, kInt, ""},
      {"zero_quantized_weights", R, kBool, ""},
      {"zero_quantized_nontrainable_weights", U, kBool, "quantized frozen weights", false},
      {"zero_quantized_gradients", R, kBool, ""},
      {"zeropp_loco_param", U, kObj, "LoCo-ZeRO++ error feedback", nullptr},
      {"mics_shard_size", R, kInt, ""},
      {"mics_hierarchical_params_gather", U, kBool, "MiCS hierarchical gathers", false},
      {"zenflow", R, kObj, ""},
  };
}

std::vector<KeyRule> offload_rules(bool optimizer) {
  const Use R = Use::read, I = Use::ignore, U = Use::unsupported;
  const std::string pipelined = "zero always overlaps the NVMe reads and writes with the CPU Adam";
  std::vector<KeyRule> rules = {
      {"device", R, kStr, ""},
      {"pin_memory", R, kBool, ""},
      {"nvme_path", R, kStr, ""},
      {"buffer_count", R, kInt, ""},
  };
  if (optimizer) {
    rules.insert(rules.end(), {
        {"pipeline_read", I, kBool, pipelined},
        {"pipeline_write", I, kBool, pipelined},
        {"fast_init", I, kBool, "how DeepSpeed first writes the swap files; the same state is written"},
        {"convert_grad_on_cpu", I, kBool, "where fp16 gradients are converted; zero's are fp32"},
        {"cpuadam_cores_perc", I, kNum, "threads for DeepSpeed's CPU Adam"},
        {"ratio", U, kNum, "partial optimizer offload", 1.0},
        {"super_offload", U, kBool, "DeepSpeed's Superchip offload", false},
        {"delayed_update", R, kObj, ""},  // ours: ZeRO-Offload's delayed parameter update
    });
  } else {
    rules.insert(rules.end(), {{"buffer_size", R, kInt, ""}, {"max_in_cpu", R, kInt, ""}});
  }
  return rules;
}

namespace {

// One offload block as written ("offload_optimizer" or "offload_param"), before it is mapped onto
// the engine's OffloadOptions.
struct OffloadBlock {
  bool cpu = false;         // device "cpu"
  bool nvme = false;        // device "nvme"
  std::string nvme_path;
  int buffer_count = 4;     // DeepSpeed's offload_optimizer default (offload_param's: 5)
  std::int64_t buffer_size = 100'000'000;  // offload_param only (DeepSpeed's default 1e8 elements)
  std::int64_t max_in_cpu = 1'000'000'000;  // offload_param only (DeepSpeed's default 1e9 elements)
  bool pin_memory = false;  // DeepSpeed's code default (its newest docs say true)
  bool delayed_update = false;  // ours, offload_optimizer only: "delayed_update": {"enabled", "warmup_steps"}
  int delayed_warmup_steps = 0;
};

// An offload block; DeepSpeed's docs say a missing device is an error, so it is one here too.
OffloadBlock read_offload(const Section& zero, const std::string& key) {
  OffloadBlock o;
  if (!zero.has(key)) return o;
  const Section s = zero.child(key, offload_rules(key == "offload_optimizer"));
  if (!s.present("device")) s.fail("device", "is missing; set \"cpu\" to offload, or \"none\"");
  const std::string device = s.get_string("device", "none");
  if (device == "cpu") {
    o.cpu = true;
  } else if (device == "nvme") {
    o.nvme = true;
    o.nvme_path = s.get_string("nvme_path", "");
    if (key == "offload_param") {
      o.buffer_count = 5;
      o.buffer_size = s.get_int("buffer_size", o.buffer_size, 1, kMax);
      o.max_in_cpu = s.get_int("max_in_cpu", o.max_in_cpu, 0, kMax);
    }
    o.buffer_count = static_cast<int>(s.get_int("buffer_count", o.buffer_count, 1, 1'000'000));
  } else if (device != "none") {
    s.fail("device", cat("is \"", device, "\"; it must be \"cpu\", \"nvme\" or \"none\""));
  }
  o.pin_memory = s.get_bool("pin_memory", o.pin_memory);
  if (s.has("delayed_update")) {
    const Section d = s.child("delayed_update", {{"enabled", Use::read, kBool, ""}, {"warmup_steps", Use::read, kInt, ""}});
    o.delayed_update = d.get_bool("enabled", false);
    o.delayed_warmup_steps = static_cast<int>(d.get_int("warmup_steps", 0, 0, 1'000'000'000));
  }
  return o;
}

// DeepSpeed's "aio" section (its AIO_DEFAULT_DICT): how the NVMe tier's I/O is submitted.
void read_aio(const Section& top, NvmeOptions& n) {
  if (!top.has("aio")) return;
  const std::string uring = "zero submits through io_uring from the step's own thread";
  const Section a = top.child("aio", {{"block_size", Use::read, kInt, ""},
                                      {"queue_depth", Use::read, kInt, ""},
                                      {"intra_op_parallelism", Use::ignore, kInt, uring},
                                      {"thread_count", Use::ignore, kInt, uring},
                                      {"single_submit", Use::ignore, kBool, uring},
                                      {"overlap_events", Use::ignore, kBool, uring},
                                      {"use_gds", Use::unsupported, kBool, "GPUDirect Storage", false}});
  n.block_size = static_cast<std::size_t>(a.get_int("block_size", static_cast<std::int64_t>(n.block_size), 1, 1LL << 30));
  n.queue_depth = static_cast<int>(a.get_int("queue_depth", n.queue_depth, 1, 4096));
}

// A count of steps as the settings hold it (beyond 2^31 steps is beyond any run).
int steps(std::int64_t n) {
  return static_cast<int>(std::clamp<std::int64_t>(n, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

// DeepSpeed's ZenFlowConfig (runtime/zenflow/zenflow_config.py) and the strategy rules of its
// configure_zenflow. Ranges and the fit to the rest of the run are the settings' (zenflow::problems).
void read_zenflow(const Section& zero, ZenflowOptions& z) {
  if (!zero.has("zenflow")) return;
  const Section s = zero.child("zenflow", allow_auto({{"topk_ratio", Use::read, kNum, ""},
                                                      {"select_strategy", Use::read, kStr, ""},
                                                      {"select_interval", Use::read, kInt, ""},
                                                      {"update_interval", Use::read, kInt, ""},
                                                      {"full_warm_up_rounds", Use::read, kInt, ""},
                                                      {"overlap_step", Use::read, kBool, ""},
                                                      {"offload", Use::unsupported, kBool, "the device-side optimizer state kept on the CPU", false},
                                                      {"auto_ratio", Use::ignore, kNum, "used only by update_interval \"auto\""},
                                                      {"pt_reserved_cores_perc", Use::ignore, kNum,
                                                       "the cores DeepSpeed keeps for PyTorch beside its optimizer process; zero's CPU Adam "
                                                       "runs on its host stream"}},
                                                     {"select_interval", "update_interval"}));
  z.enabled = true;
  z.topk_ratio = s.get_number("topk_ratio", z.topk_ratio);
  const std::string strategy = s.get_string("select_strategy", "auto");
  if (strategy == "auto") {
    if (s.present("select_interval") && !s.is_auto("select_interval")) {
      s.fail("select_interval", "is set with select_strategy \"auto\", which chooses its own interval (DeepSpeed stops with that "
                                "warning): remove it, or set select_strategy to \"step\"");
    }
  } else if (strategy == "step") {
    if (!s.present("select_interval") || s.is_auto("select_interval")) {
      s.fail("select_interval", "must be a number of steps with select_strategy \"step\" (DeepSpeed's rule)");
    }
    z.select_interval = steps(s.get_int("select_interval", 0, 1, kMax));  // 0 (once) where refused: no second complaint
  } else if (strategy == "epoch") {
    s.fail("select_strategy", "= \"epoch\" is not supported yet (zero's engine does not know the epoch's length): use \"step\" with "
                              "select_interval, or \"auto\" (the columns chosen once, after the warm-up)");
  } else {
    s.fail("select_strategy", cat("is \"", strategy, "\"; it must be \"auto\", \"step\" or \"epoch\""));
  }
  if (!s.present("update_interval") || s.is_auto("update_interval")) {
    s.fail("update_interval", "= \"auto\" (DeepSpeed's default: an adaptive interval) is not supported yet: set a number of steps "
                              "(DeepSpeed's tutorial uses 4)");
  } else {
    z.update_interval = steps(s.get_int("update_interval", 1, std::numeric_limits<std::int64_t>::min(), kMax));
  }
  z.full_warm_up_rounds = steps(s.get_int("full_warm_up_rounds", 0, std::numeric_limits<std::int64_t>::min(), kMax));
  z.overlap_step = s.get_bool("overlap_step", false);
}

// A key DeepSpeed accepts under two names (pydantic's field name and its stage3_ alias).
std::int64_t read_aliased(const Section& s, const std::string& key, const std::string& alias, std::int64_t fallback) {
  if (s.present(key) && s.present(alias)) s.fail(alias, cat("and ", key, " are the same setting; keep one"));
  return s.get_int(s.present(alias) ? alias : key, fallback, 0, kMax);
}

// The Hugging Face Trainer's model-dependent "auto" sizes (trainer_config_finalize), from the
// model's hidden size.
void declare_auto_sizes(const Section& s, std::int64_t hidden) {
  if (hidden <= 0) return;  // no model known: "auto" resolves as if the key were absent
  const std::string h = cat("hidden size ", hidden);
  s.set_auto("reduce_bucket_size", hidden * hidden, cat(h, " squared, as the Hugging Face Trainer computes it"));
  s.set_auto("stage3_prefetch_bucket_size", static_cast<std::int64_t>(0.9 * static_cast<double>(hidden * hidden)),
             cat("0.9 * ", h, " squared, as the Hugging Face Trainer computes it"));
  s.set_auto("stage3_param_persistence_threshold", 10 * hidden, cat("10 * ", h, ", as the Hugging Face Trainer computes it"));
}

// DeepSpeed's deprecated booleans, mapped the way its new_param_fn does.
void read_deprecated_offload(const Section& s, OffloadBlock& optimizer, OffloadBlock& param) {
  if (s.get_bool("cpu_offload", false)) {
    if (s.has("offload_optimizer")) s.fail("cpu_offload", "(deprecated) and offload_optimizer both set optimizer offload; keep offload_optimizer");
    optimizer.cpu = true;
  }
  if (s.get_bool("cpu_offload_param", false)) {
    if (s.has("offload_param")) s.fail("cpu_offload_param", "(deprecated) and offload_param both set parameter offload; keep offload_param");
    param.cpu = true;
  }
  if (s.has("cpu_offload_use_pin_memory")) {
    const bool pin = s.get_bool("cpu_offload_use_pin_memory", false);
    optimizer.pin_memory = optimizer.pin_memory || pin;
    param.pin_memory = param.pin_memory || pin;
  }
}

// The two blocks as the engine's placement. The engine pins every host buffer it pins or none,
// so either block's pin_memory pins; the delayed update is offload_optimizer's. Whether the
// combination is one the engine runs is settings_problems' to say (parse_config reports it).
OffloadOptions placement(const OffloadBlock& optimizer, const OffloadBlock& param) {
  OffloadOptions o;
  o.optimizer = optimizer.cpu || optimizer.nvme;
  o.optimizer_nvme = optimizer.nvme;
  o.nvme.path = optimizer.nvme_path;
  o.nvme.buffer_count = optimizer.buffer_count;
  o.params = param.cpu || param.nvme;
  o.params_nvme = param.nvme;
  o.param_nvme.path = param.nvme_path;
  o.param_nvme.buffer_count = param.buffer_count;
  o.param_nvme.buffer_size = static_cast<std::size_t>(param.buffer_size);
  o.param_nvme.max_in_cpu = static_cast<std::size_t>(param.max_in_cpu);
  o.pin_memory = optimizer.pin_memory || param.pin_memory;
  o.delayed_update = optimizer.delayed_update;
  o.warmup_steps = optimizer.delayed_warmup_steps;
  return o;
}

std::size_t bucket(const Section& s, const std::string& key) {
  constexpr std::int64_t kDeepSpeedDefault = 500'000'000;  // elements, DeepSpeed's reduce_bucket_size and allgather_bucket_size
  return static_cast<std::size_t>(s.get_int(key, kDeepSpeedDefault, 1, kMax));
}

}  // namespace

void read_zero(const Section& top, const AutoContext& ctx, EngineSettings& z) {
  read_aio(top, z.offload.nvme);  // read in any case, for its keys' checks
  if (!top.has("zero_optimization")) return;
  const nlohmann::json& v = top.at("zero_optimization");
  if (v.is_boolean()) {  // DeepSpeed's deprecated form: true is stage 1
    z.stage = v.get<bool>() ? 1 : 0;
    return;
  }
  const Section s = top.child("zero_optimization",
                              allow_auto(zero_rules(), {"reduce_bucket_size", "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold",
                                                        "stage3_gather_16bit_weights_on_model_save"}));  // accelerate fills the last
  declare_auto_sizes(s, ctx.hidden);
  const std::int64_t stage = s.get_int("stage", 0, std::numeric_limits<std::int64_t>::min(), kMax);
  if (stage < 0 || stage > 3) {
    s.fail("stage", cat("is ", stage, "; ZeRO stages are 0-3 (0: data parallel, 1: + optimizer state sharded, "
                        "2: + gradients, 3: + parameters)"));
  } else {
    z.stage = static_cast<int>(stage);
  }
  for (const char* key : {"reduce_bucket_size", "allgather_bucket_size"}) {
    if (s.has(key) && s.at(key) == 0) {  // DeepSpeed accepts 0: then every parameter moves on its own
      s.fail(key, "= 0 is known but not supported yet: DeepSpeed then moves each parameter on its own, while zero's buckets bound "
                  "the pieces of a unit's collective and have no size-0 meaning; write a positive size (DeepSpeed's default is 5e8) "
                  "or remove the key");
    }
  }
  z.reduce_bucket_elements = bucket(s, "reduce_bucket_size");
  z.allgather_bucket_elements = bucket(s, "allgather_bucket_size");
  z.overlap_comm = s.get_bool("overlap_comm", z.overlap_comm);  // zero: true in every stage (DeepSpeed: stage 3 only)
  Stage3Options& s3 = z.stage3;
  s3.prefetch_bucket = read_aliased(s, "prefetch_bucket_size", "stage3_prefetch_bucket_size", s3.prefetch_bucket);
  s3.persistence_threshold = read_aliased(s, "param_persistence_threshold", "stage3_param_persistence_threshold", s3.persistence_threshold);
  s3.max_live = read_aliased(s, "max_live_parameters", "stage3_max_live_parameters", s3.max_live);
  s3.max_reuse_distance = read_aliased(s, "max_reuse_distance", "stage3_max_reuse_distance", s3.max_reuse_distance);
  // Read for its type, and changing nothing zero computes: zero's gradients are always
  // contiguous (one flat buffer per unit). sub_group_size is what the NVMe tier swaps at once
  // (other placements step a shard in one pass).
  s.get_bool("contiguous_gradients", true);
  const auto sub_group = static_cast<std::size_t>(s.get_int("sub_group_size", 1'000'000'000, 1, kMax));
  OffloadBlock optimizer = read_offload(s, "offload_optimizer");
  OffloadBlock param = read_offload(s, "offload_param");
  read_deprecated_offload(s, optimizer, param);
  const NvmeOptions aio = z.offload.nvme;
  z.offload = placement(optimizer, param);
  z.offload.nvme.block_size = aio.block_size;
  z.offload.nvme.queue_depth = aio.queue_depth;
  z.offload.nvme.sub_group_size = sub_group;
  read_zenflow(s, z.offload.zenflow);
  // Hybrid sharding; its range and its fit to the world are the settings' (settings_problems, world_problems).
  z.zero_quantized_gradients = s.get_bool("zero_quantized_gradients", false);  // checked with the stage (settings_problems)
  z.mics_shard_size = static_cast<int>(s.get_int("mics_shard_size", -1, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
  // ZeRO++'s weight options; their stage and their fit to the nodes are the settings' (settings_problems, node_problems).
  z.quantized_weights = s.get_bool("zero_quantized_weights", false);
  z.hpz_partition_size = static_cast<int>(s.get_int("zero_hpz_partition_size", 1, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

}  // namespace zero::config_detail
