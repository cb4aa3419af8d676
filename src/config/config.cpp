// The top level of the config, the batch, the optimizer, precision, and our own sections, and
// parse_config, which runs every reader and reports all their problems at once. zero_optimization
// is in zero_section.cpp, the scheduler in schedule.cpp, the key-table machinery in reader.cpp, the
// file and the command-line overrides in file.cpp.
#include "config/config.h"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <limits>
#include <set>

#include "backends/facts.h"
#include "common/error.h"
#include "config/reader.h"

namespace zero {

using namespace config_detail;

namespace {

constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();
constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();
constexpr JsonType kBool = JsonType::boolean, kInt = JsonType::integer, kNum = JsonType::number,
                   kStr = JsonType::string, kObj = JsonType::object, kArr = JsonType::array, kAny = JsonType::any;

// The top level. Ignored keys change no number zero computes (logging and monitoring, and
// permissions for optimizers zero does not have); "disabled only" sections are accepted with
// "enabled": false and are otherwise known but not supported yet (read_disabled_only).
std::vector<KeyRule> top_rules_table() {
  const Use R = Use::read, I = Use::ignore, U = Use::unsupported;
  return {
      {"train_batch_size", R, kInt, ""},
      {"train_micro_batch_size_per_gpu", R, kInt, ""},
      {"gradient_accumulation_steps", R, kInt, ""},
      {"optimizer", R, kObj, ""},
      {"scheduler", R, kObj, ""},
      {"gradient_clipping", R, kNum, ""},
      {"steps_per_print", R, kInt, ""},
      {"zero_optimization", R, kAny, ""},  // an object, or DeepSpeed's deprecated boolean
      {"fp16", R, kObj, ""},
      {"bf16", R, kObj, ""},
      {"bfloat16", R, kObj, ""},  // DeepSpeed's other spelling of bf16
      {"communication_data_type", R, kAny, ""},
      {"train_steps", R, kInt, ""},  // ours
      {"seed", R, kInt, ""},         // ours
      {"device_memory", R, kStr, ""},  // ours: the device tier's capacity, "80GiB"
      {"device", R, kStr, ""},         // ours: the compute device, a backend's name (backends/registry.h)
      {"host_memory", R, kStr, ""},    // ours: the host memory of one node (each rank's tier: its share)
      {"comm_timeout_seconds", R, kNum, ""},  // ours: a collective waiting longer fails
      {"prescale_gradients", R, kBool, ""},
      {"gradient_predivide_factor", R, kNum, ""},
      {"model", R, kObj, ""},        // ours
      {"activation_checkpointing", R, kObj, ""},  // activation_section.cpp
      {"data", R, kObj, ""},         // ours
      {"train_checkpoints", R, kObj, ""},  // ours: train_sections.cpp
      {"train_eval", R, kObj, ""},         // ours: train_sections.cpp
      // Disabled only (read_disabled_only below).
      {"amp", R, kObj, ""},
      {"autotuning", R, kObj, ""},
      {"elasticity", R, kObj, ""},
      {"nebula", R, kObj, ""},
      {"hybrid_engine", R, kObj, ""},
      {"torch_autocast", R, kObj, ""},
      {"curriculum_learning", R, kObj, ""},
      {"progressive_layer_drop", R, kObj, ""},
      {"eigenvalue", R, kObj, ""},
      {"data_efficiency", R, kObj, ""},
      // Accepted and ignored: no numerical effect.
      {"wall_clock_breakdown", I, kBool, "DeepSpeed's per-phase timing log; zero train prints step time"},
      {"memory_breakdown", I, kBool, "DeepSpeed's memory log; zero train prints the ledger"},
      {"dump_state", I, kBool, "prints DeepSpeed's state at start-up"},
      {"log_level", I, kAny, "DeepSpeed's logging level"},
      {"flops_profiler", I, kObj, "a profiler; it only measures"},
      {"tensorboard", I, kObj, "a monitor; zero train --metrics writes the same numbers as JSON"},
      {"wandb", I, kObj, "a monitor; zero train --metrics writes the same numbers as JSON"},
      {"csv_monitor", I, kObj, "a monitor; zero train --metrics writes the same numbers as JSON"},
      {"comet", I, kObj, "a monitor; zero train --metrics writes the same numbers as JSON"},
      {"comms_logger", I, kObj, "a communication log; zero counts traffic itself"},
      {"timers", I, kObj, "DeepSpeed's timer synchronisation"},
      {"zero_allow_untested_optimizer", I, kBool, "permits client optimizers with ZeRO; zero has Adam, AdamW and Lamb"},
      {"zero_force_ds_cpu_optimizer", I, kBool, "DeepSpeed's check that offload uses its CPU Adam; zero's always does"},
      {"disable_allgather", I, kBool, "DeepSpeed reads it, but nothing in DeepSpeed uses it"},
      {"graph_harvesting", I, kBool, "captures the optimizer's kernels in CUDA graphs; the arithmetic is the same"},
      {"use_data_before_expert_parallelism", I, kBool, "the order of process groups for expert parallelism; zero's models have no experts"},
      {"seq_parallel_communication_data_type", I, kAny, "the gradient data type of sequence parallelism, which zero does not have"},
      {"seq_parallel_comm_data_type", I, kAny, "the gradient data type of sequence parallelism, which zero does not have"},
      {"vocabulary_size", I, kInt, "DeepSpeed only warns when it is not a multiple of 8; zero's model section has vocab_size"},
      {"checkpoint", I, kObj, "how DeepSpeed saves, tags and loads checkpoints; training computes the same numbers"},
      {"datastates_ckpt", I, kObj, "an asynchronous checkpoint engine; training computes the same numbers"},
      {"aio", R, kObj, ""},  // the NVMe tier's I/O (zero_section.cpp)
      // Known but not supported yet, accepted at their no-op value.
      {"sparse_gradients", U, kBool, "sparse embedding gradients; zero reduces dense gradients", false},
      {"gradient_allreduce_op", U, kStr, "\"sum\" leaves the reduced gradients summed over the ranks instead of averaged", "mean"},
      {"managed_gradient_accumulation", U, kBool, "false hands the accumulation boundary to the client's loop; zero's loop owns it", true},
      {"dataloader_drop_last", U, kBool, "DeepSpeed's data loader option; zero's loader is configured in the \"data\" section", false},
      // Known but not supported yet.
      {"sparse_attention", U, kObj, "sparse attention kernels (they change what attention computes)"},
      {"pipeline", U, kObj, "pipeline parallelism; zero is data-parallel"},
      {"tensor_parallel", U, kObj, "tensor parallelism; zero is data-parallel"},
      {"expert_parallel", U, kObj, "expert parallelism; zero's models have no experts"},
      {"compression_training", U, kObj, "compression (quantization, pruning) during training"},
      {"quantize_training", U, kObj, "quantized training"},
      {"weight_quantization", U, kObj, "weight quantization"},
      {"compile", U, kObj, "torch.compile and DeepCompile"},
      {"data_types", R, kObj, ""},
  };
}

// The keys the Hugging Face Trainer fills in when they are "auto" (trainer_config_process).
std::vector<KeyRule> top_rules() {
  return allow_auto(top_rules_table(), {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "gradient_clipping"});
}

// A DeepSpeed feature zero does not have, accepted only when the file switches it off.
void read_disabled_only(const Section& top, const std::string& key, const std::string& what) {
  if (!top.has(key)) return;
  const nlohmann::json& s = top.at(key);
  const auto it = s.find("enabled");
  if (it != s.end() && it->is_boolean() && !it->get<bool>()) {
    top.log().ignored.push_back(top.path_of(key));
    return;
  }
  top.fail(key, cat("is known but not supported yet: ", what, "; set \"enabled\": false or remove the section"));
}

std::optional<std::int64_t> positive_batch(const Section& top, const std::string& key, const char* meaning) {
  if (!top.has(key)) return std::nullopt;
  const std::int64_t v = top.get_int(key, 0, std::numeric_limits<std::int64_t>::min(), kMaxInt64);
  if (v <= 0) top.fail(key, cat("is ", v, "; it must be a positive integer (", meaning, ")"));
  if (v > kMaxInt) top.fail(key, cat("is ", v, ", more than ", kMaxInt));
  if (top.is_bad(key)) return std::nullopt;
  return v;
}

// "auto" batch keys are resolved as if absent, by DeepSpeed's rules below (the Trainer fills them
// from its batch size, accumulation steps and world size, which is the same arithmetic).
void log_batch_autos(const Section& top, std::int64_t train, std::int64_t micro, std::int64_t accum, int world) {
  const std::string rule = cat("train_micro_batch_size_per_gpu * gradient_accumulation_steps * world size = ", micro, " * ", accum, " * ", world);
  top.set_auto("train_batch_size", train, rule);
  top.set_auto("train_micro_batch_size_per_gpu", micro, "from the other batch keys and the world size (--micro-batch sets it)");
  top.set_auto("gradient_accumulation_steps", accum, "from the other batch keys and the world size; 1 when they do not give it");
  for (const char* key : {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"}) {
    if (top.is_auto(key)) top.resolve_auto(key, 0);
  }
}

[[noreturn]] void batch_error(const std::string& what) {
  throw ConfigError(cat("[config] ", what, " (DeepSpeed's rule: train_batch_size = train_micro_batch_size_per_gpu * gradient_accumulation_steps * world size)"));
}

// DeepSpeed's _set_batch_related_parameters and _batch_assertion (runtime/config.py): any two of
// the three give the third, one alone is completed with gradient_accumulation_steps = 1, and all
// three must agree with the world size. Where DeepSpeed's floor division would silently lose
// samples, the message says what to change instead.
void read_batch(const Section& top, int world, TrainConfig& c) {
  const auto tb = positive_batch(top, "train_batch_size", "samples per optimizer step, over all ranks");
  const auto mb = positive_batch(top, "train_micro_batch_size_per_gpu", "samples per rank per forward/backward");
  const auto ga = positive_batch(top, "gradient_accumulation_steps", "micro-batches per optimizer step");
  for (const char* key : {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"}) {
    if (top.is_bad(key)) return;  // reported; the others cannot be checked against it
  }
  const std::int64_t w = world;
  if (static_cast<double>(mb.value_or(1)) * static_cast<double>(ga.value_or(1)) * static_cast<double>(w) > kMaxInt) {
    batch_error(cat("train_micro_batch_size_per_gpu * gradient_accumulation_steps * world size is more than ", kMaxInt));
  }
  std::int64_t train = 0, micro = 0, accum = 1;
  if (tb && mb && ga) {
    train = *tb, micro = *mb, accum = *ga;
    if (train != micro * accum * w) {
      batch_error(cat("train_batch_size ", train, " != train_micro_batch_size_per_gpu ", micro, " * gradient_accumulation_steps ",
                      accum, " * world size ", w, " = ", micro * accum * w, "; set train_batch_size to ", micro * accum * w,
                      ", or change the others so that the product is ", train));
    }
  } else if (tb && mb) {
    train = *tb, micro = *mb;
    if (train % (micro * w) != 0) {
      batch_error(cat("train_batch_size ", train, " is not a multiple of train_micro_batch_size_per_gpu ", micro, " * world size ",
                      w, " = ", micro * w, ", so gradient_accumulation_steps would not be a whole number; make train_batch_size a multiple of ",
                      micro * w, " or change train_micro_batch_size_per_gpu"));
    }
    accum = train / (micro * w);
  } else if (tb && ga) {
    train = *tb, accum = *ga;
    if (train % (accum * w) != 0) {
      batch_error(cat("train_batch_size ", train, " is not a multiple of gradient_accumulation_steps ", accum, " * world size ", w,
                      " = ", accum * w, ", so train_micro_batch_size_per_gpu would not be a whole number; make train_batch_size a multiple of ",
                      accum * w, " or change gradient_accumulation_steps"));
    }
    micro = train / (accum * w);
  } else if (mb && ga) {
    micro = *mb, accum = *ga, train = micro * accum * w;
  } else if (tb) {
    train = *tb;
    if (train % w != 0) {
      batch_error(cat("train_batch_size ", train, " does not split over ", w, " ranks; make it a multiple of ", w,
                      " or set train_micro_batch_size_per_gpu and gradient_accumulation_steps"));
    }
    micro = train / w;
  } else if (mb) {
    micro = *mb, train = micro * w;
  } else if (top.is_auto("train_micro_batch_size_per_gpu") || top.is_auto("train_batch_size")) {
    throw ConfigError(cat("[config] ", top.is_auto("train_micro_batch_size_per_gpu") ? "train_micro_batch_size_per_gpu" : "train_batch_size",
                          " is \"auto\" and no other batch key gives the micro-batch: give --micro-batch N (what the Hugging Face "
                          "Trainer fills in from --per_device_train_batch_size) or write a number"));
  } else {
    throw ConfigError("[config] set train_batch_size or train_micro_batch_size_per_gpu (or both), or give --micro-batch N; as in "
                      "DeepSpeed, gradient_accumulation_steps alone cannot give the batch size");
  }
  if (train > kMaxInt) batch_error(cat("train_batch_size ", train, " is more than ", kMaxInt));
  log_batch_autos(top, train, micro, accum, world);
  c.train_batch_size = static_cast<int>(train);
  c.micro_batch_size = static_cast<int>(micro);
  c.gradient_accumulation_steps = static_cast<int>(accum);
}

// With fp16 off, its loss-scaling keys have no effect: accepted and listed as ignored.
std::vector<KeyRule> fp16_rules(bool on) {
  const Use R = Use::read, I = Use::ignore, U = Use::unsupported;
  const Use L = on ? R : I;
  const std::string off = on ? "" : "loss scaling applies only when fp16 is enabled";
  return {{"enabled", R, kBool, ""},
          {"auto_cast", I, kBool, "casts a module's inputs to fp16; zero's models take token ids"},
          {"loss_scale", L, kNum, off},
          {"initial_scale_power", L, kInt, off},
          {"loss_scale_window", L, kInt, off},
          {"hysteresis", L, kInt, off},
          {"consecutive_hysteresis", L, kBool, off},
          {"min_loss_scale", L, kNum, off},
          {"fp16_master_weights_and_grads", U, kBool, "fp16 master weights; zero's masters are fp32", false}};
}

std::vector<KeyRule> bf16_rules() {
  const Use R = Use::read, I = Use::ignore, U = Use::unsupported;
  return {{"enabled", R, kBool, ""},
          {"immediate_grad_update", I, kBool, "when DeepSpeed's bf16 optimizer folds gradients in; zero reduces as units complete"},
          {"check_grad_overflow", U, kBool, "skipping bf16 steps whose gradients overflow; zero checks overflow only for fp16", false},
          {"bf16_master_weights_and_grads", U, kBool, "bf16 master weights; zero's masters are fp32", false},
          {"bf16_optimizer_states", U, kBool, "bf16 Adam moments; zero's are fp32", false}};
}

// fp16's loss scaler, DeepSpeed's keys and defaults: loss_scale 0 (dynamic), initial_scale_power
// 16, loss_scale_window 1000, hysteresis 2, consecutive_hysteresis false, min_loss_scale 1.
LossScalerConfig read_loss_scaler(const Section& s) {
  LossScalerConfig c;
  c.static_scale = s.get_number("loss_scale", 0.0);
  if (!(c.static_scale >= 0.0) || !std::isfinite(c.static_scale)) {
    s.fail("loss_scale", cat("is ", s.at("loss_scale").dump(), "; it must be 0 (dynamic loss scaling) or a positive static scale"));
  }
  c.initial_scale_power = static_cast<int>(s.get_int("initial_scale_power", 16, 0, 100));
  c.window = static_cast<int>(s.get_int("loss_scale_window", 1000, 1, std::numeric_limits<int>::max()));
  c.hysteresis = static_cast<int>(s.get_int("hysteresis", 2, 1, std::numeric_limits<int>::max()));
  c.consecutive_hysteresis = s.get_bool("consecutive_hysteresis", false);
  c.min_scale = s.get_number("min_loss_scale", 1.0);
  if (!(c.min_scale > 0.0) || !std::isfinite(c.min_scale)) {
    s.fail("min_loss_scale", cat("is ", s.at("min_loss_scale").dump(), "; it must be a positive number"));
  }
  if (c.dynamic() && c.min_scale > std::ldexp(1.0, c.initial_scale_power)) {
    s.fail("min_loss_scale", cat("is ", c.min_scale, ", above the initial scale 2^", c.initial_scale_power, " = ",
                                 std::ldexp(1.0, c.initial_scale_power), "; lower min_loss_scale or raise initial_scale_power"));
  }
  return c;
}

void read_precision(const Section& top, Precision& c) {
  if (top.has("bf16") && top.has("bfloat16")) top.fail("bfloat16", "and bf16 are the same section; keep one");
  bool fp16 = false, bf16 = false;
  for (const char* key : {"fp16", "bf16", "bfloat16"}) {
    if (!top.has(key)) continue;
    const bool is_fp16 = std::string(key) == "fp16";
    const nlohmann::json& block = top.at(key);
    const bool enabled = block.is_object() && block.contains("enabled") && block["enabled"].is_boolean() && block["enabled"].get<bool>();
    const Section s = top.child(key, allow_auto(is_fp16 ? fp16_rules(enabled) : bf16_rules(), {"enabled"}));
    s.set_auto("enabled", false, cat("zero's default: fp32, as the Hugging Face Trainer leaves it without --", key == std::string("fp16") ? "fp16" : "bf16",
                                     "; write true to train in ", key == std::string("fp16") ? "fp16" : "bf16"));
    const bool on = s.get_bool("enabled", false);
    if (is_fp16) {
      fp16 = on;
      if (on) c.loss_scaler = read_loss_scaler(s);
    } else {
      bf16 = on;
    }
  }
  if (fp16 && bf16) {
    top.fail("fp16", "and bf16 are both enabled: choose one (bf16 needs no loss scaling; fp16 scales the loss)");
  }
  c.compute = fp16 && !bf16 ? Dtype::kF16 : bf16 && !fp16 ? Dtype::kBf16 : Dtype::kF32;
}

const char* compute_type_name(const TrainConfig& c) { return c.fp16() ? "fp16" : c.bf16() ? "bf16" : "fp32"; }

// A data type key (communication_data_type, data_types.grad_accum_dtype): one of DeepSpeed's
// names, and (not supported yet otherwise) the type zero computes in, which it reduces and
// accumulates in.
void check_data_type(const Section& s, const std::string& key, const TrainConfig& c, const std::string& what) {
  if (!s.has(key)) return;
  const nlohmann::json& v = s.at(key);
  if (!v.is_string()) s.fail(key, cat("must be a string or null, found ", describe_value(v)));
  const std::string t = v.get<std::string>();
  if (t != "fp32" && t != "fp16" && t != "bf16") {
    s.fail(key, cat("= \"", t, "\" is not a data type; DeepSpeed's are \"fp32\", \"fp16\" and \"bf16\""));
  }
  const std::string compute = compute_type_name(c);
  if (t != compute) {
    s.fail(key, cat("= \"", t, "\" is known but not supported yet: zero ", what, " in the training type (", compute,
                    " here); set \"", compute, "\" or remove it"));
  }
}

void read_communication(const Section& top, const TrainConfig& c) {
  check_data_type(top, "communication_data_type", c, "reduces gradients and gathers parameters");
  if (!top.has("data_types")) return;
  const Section d = top.child("data_types", {{"grad_accum_dtype", Use::read, kAny, ""}});
  check_data_type(d, "grad_accum_dtype", c, "accumulates gradients");
}

// The shape's own checks (GptShape/LlamaShape::validate), as a [config] problem in "model".
template <typename Shape>
void validate_shape(const Section& s, const Shape& shape) {
  try {
    shape.validate();
  } catch (const ConfigError& e) {
    std::string what = e.what();
    if (what.rfind("[model] ", 0) == 0) what = what.substr(8);
    s.log().problem(cat("[config] in \"model\": ", what));
  }
}

// "model": {"type": "llama", ...} with Hugging Face's LlamaConfig names (config.h).
ModelSection read_llama_model(const Section& top) {
  ModelSection m;
  m.type = "llama";
  const std::size_t before = top.log().problems.size();
  const Use R = Use::read;
  const Section s = top.child("model", {{"type", R, kStr, ""}, {"vocab_size", R, kInt, ""}, {"max_position_embeddings", R, kInt, ""},
                                        {"hidden_size", R, kInt, ""}, {"intermediate_size", R, kInt, ""},
                                        {"num_attention_heads", R, kInt, ""}, {"num_key_value_heads", R, kInt, ""},
                                        {"num_hidden_layers", R, kInt, ""}, {"rms_norm_eps", R, kNum, ""}, {"rope_theta", R, kNum, ""},
                                        {"tie_word_embeddings", R, kBool, ""}, {"checkpoint_activations", R, kBool, ""},
                                        {"init_from", R, kStr, ""}});
  LlamaShape& l = m.llama;
  l.vocab_size = static_cast<int>(s.get_int("vocab_size", l.vocab_size, 1, 65536));
  l.seq_len = static_cast<int>(s.get_int("max_position_embeddings", l.seq_len, 1, kMaxInt));
  l.hidden = static_cast<int>(s.get_int("hidden_size", l.hidden, 1, kMaxInt));
  l.intermediate = static_cast<int>(s.get_int("intermediate_size", l.intermediate, 1, kMaxInt));
  l.heads = static_cast<int>(s.get_int("num_attention_heads", l.heads, 1, kMaxInt));
  l.kv_heads = static_cast<int>(s.get_int("num_key_value_heads", l.heads, 1, kMaxInt));  // Hugging Face's default
  l.layers = static_cast<int>(s.get_int("num_hidden_layers", l.layers, 1, kMaxInt));
  const double eps = s.get_number("rms_norm_eps", l.rms_norm_eps);
  if (s.has("rms_norm_eps") && !(eps > 0 && eps < 1)) s.fail("rms_norm_eps", cat("= ", eps, " must be above 0 and below 1 (Llama 2 uses 1e-5)"));
  else l.rms_norm_eps = static_cast<float>(eps);
  const double theta = s.get_number("rope_theta", l.rope_theta);
  if (s.has("rope_theta") && !(theta > 1 && theta < 1e12)) s.fail("rope_theta", cat("= ", theta, " must be above 1 (Llama 2 uses 10000)"));
  else l.rope_theta = theta;
  l.tie_word_embeddings = s.get_bool("tie_word_embeddings", false);
  m.checkpointing.enabled = s.get_bool("checkpoint_activations", false);
  m.init_from = s.get_string("init_from", "");
  if (s.log().problems.size() == before) validate_shape(s, l);
  return m;
}

ModelSection read_model(const Section& top) {
  ModelSection m;
  if (!top.has("model")) return m;
  const nlohmann::json& j = top.at("model");
  if (j.is_object() && j.contains("type") && j["type"] == "llama") return read_llama_model(top);
  const std::size_t before = top.log().problems.size();
  const Use R = Use::read;
  const Section s = top.child("model", {{"type", R, kStr, ""}, {"vocab_size", R, kInt, ""}, {"n_ctx", R, kInt, ""},
                                        {"seq_len", R, kInt, ""}, {"n_embd", R, kInt, ""}, {"n_layer", R, kInt, ""},
                                        {"n_head", R, kInt, ""}, {"checkpoint_activations", R, kBool, ""},
                                        {"init_from", R, kStr, ""}});
  m.type = s.get_string("type", "gpt");
  if (m.type != "gpt") s.fail("type", cat("is \"", m.type, "\"; zero trains \"gpt\" and \"llama\""));
  if (s.has("n_ctx") && s.has("seq_len")) s.fail("seq_len", "and n_ctx are the same (the context length); keep one");
  GptShape& g = m.shape;
  g.vocab_size = static_cast<int>(s.get_int("vocab_size", g.vocab_size, 1, 65536));
  g.seq_len = static_cast<int>(s.get_int(s.has("seq_len") ? "seq_len" : "n_ctx", g.seq_len, 1, kMaxInt));
  g.channels = static_cast<int>(s.get_int("n_embd", g.channels, 1, kMaxInt));
  g.layers = static_cast<int>(s.get_int("n_layer", g.layers, 1, kMaxInt));
  g.heads = static_cast<int>(s.get_int("n_head", g.heads, 1, kMaxInt));
  m.checkpointing.enabled = s.get_bool("checkpoint_activations", false);
  m.init_from = s.get_string("init_from", "");
  if (s.log().problems.size() != before) return m;  // a shape from reported values would only repeat them
  validate_shape(s, g);
  return m;
}

DataSection read_data(const Section& top, std::uint64_t seed) {
  DataSection d;
  d.seed = seed;
  if (!top.has("data")) return d;
  const Use R = Use::read;
  const Section s = top.child("data", {{"path", R, kStr, ""}, {"val_path", R, kStr, ""}, {"format", R, kStr, ""}, {"tokenizer", R, kStr, ""},
                                          {"val_fraction", R, kNum, ""}, {"seed", R, kInt, ""}});
  d.path = s.get_string("path", "");
  if (s.has("path") && d.path.empty()) {
    s.fail("path", "is \"\"; give a text or llm.c .bin file, or remove the key for the default text");
  }
  const std::string format = s.get_string("format", "auto");
  if (format == "auto") d.format = DataFormat::auto_detect;
  else if (format == "text") d.format = DataFormat::text;
  else if (format == "bin") d.format = DataFormat::bin;
  else s.fail("format", cat("is \"", format, "\"; it must be \"auto\" (by extension), \"text\" (UTF-8, byte tokens) or \"bin\" (llm.c tokens)"));
  d.tokenizer = s.get_string("tokenizer", "");
  if (s.has("tokenizer") && d.tokenizer.empty()) {
    s.fail("tokenizer", "is \"\"; give \"bytes\", a GPT-2 vocab.json / encoder.json, a SentencePiece tokenizer.model, or a "
                        "directory holding one, or remove the key for bytes");
  }
  if (!d.tokenizer.empty() && d.format == DataFormat::bin) {
    s.fail("tokenizer", "is set, but data.format is \"bin\" (tokens already made): a tokenizer applies to text; remove one of them");
  }
  d.val_path = s.get_string("val_path", "");
  if (s.has("val_path") && d.val_path.empty()) {
    s.fail("val_path", "is \"\"; give a validation file (text or llm.c .bin, like data.path), or remove the key to hold out data.val_fraction");
  }
  d.val_fraction = s.get_number("val_fraction", d.val_path.empty() ? d.val_fraction : 0.0);
  if (!(d.val_fraction >= 0.0 && d.val_fraction < 1.0)) s.fail("val_fraction", cat("is ", d.val_fraction, "; it must be in [0, 1)"));
  if (!d.val_path.empty() && d.val_fraction > 0.0) {
    s.fail("val_fraction", cat("is ", d.val_fraction, " but data.val_path names a validation set of its own: remove one of them"));
  }
  d.seed = static_cast<std::uint64_t>(s.get_int("seed", static_cast<std::int64_t>(seed), 0, kMaxInt64));
  return d;
}

// Runs one reader; a ConfigError it throws is one more problem. A JSON library exception that
// follows a problem already reported is its consequence; one that does not is reported as it is.
template <class Read>
void attempt(ReadLog& log, Read&& read) {
  const std::size_t before = log.problems.size();
  try {
    read();
  } catch (const ConfigError& e) {
    log.problem(e.what());
  } catch (const nlohmann::json::exception& e) {
    if (log.problems.size() == before) log.problem(cat("[config] a value of an unexpected kind: ", e.what(), "; check the file against docs/training.md"));
  }
}

// All problems in one error: the first alone as it is, several numbered.
[[noreturn]] void throw_problems(const std::vector<std::string>& problems, const std::string& source) {
  auto body = [](const std::string& m) { return m.rfind("[config] ", 0) == 0 ? m.substr(9) : m; };
  const std::string where = source.empty() ? std::string() : cat(source, ": ");
  if (problems.size() == 1) throw ConfigError(cat("[config] ", where, body(problems[0])));
  std::string msg = cat("[config] ", where, problems.size(), " problems; fix them all, then run again:");
  for (std::size_t i = 0; i < problems.size(); ++i) msg += cat("\n  ", i + 1, ". ", body(problems[i]));
  throw ConfigError(msg);
}

// Its range is the settings' (settings_problems, reported with the combinations).
void read_clipping(const Section& top, EngineSettings& s) {
  top.set_auto("gradient_clipping", 0.0, "zero's default: off; the Hugging Face Trainer would fill in its --max_grad_norm (1.0 by default): "
                                         "write a number to clip");
  s.gradient_clipping = top.get_float("gradient_clipping", 0.0f);
}

void read_top_scalars(const Section& top, TrainConfig& c) {
  c.steps_per_print = static_cast<int>(top.get_int("steps_per_print", 10, 1, kMaxInt));
  c.train_steps = top.get_int("train_steps", c.train_steps, 1, kMaxInt64);
  c.seed = static_cast<std::uint64_t>(top.get_int("seed", static_cast<std::int64_t>(c.seed), 0, kMaxInt64));
  c.device_memory = top.get_string("device_memory", "");
  c.device = top.get_string("device", c.device);
  if (!is_user_backend(c.device)) top.fail("device", cat("is '", c.device, "'; it must be ", backend_names()));
  c.host_memory = top.get_string("host_memory", "");
  for (const char* key : {"device_memory", "host_memory"}) {
    if (top.has(key) && top.get_string(key, "x").empty()) {
      top.fail(key, "is \"\"; give a capacity per rank such as \"16GiB\", or remove the key for no limit");
    }
  }
  c.comm_timeout_seconds = top.get_number("comm_timeout_seconds", c.comm_timeout_seconds);
  // At least a millisecond (the communicator's unit), at most ~30 years (no overflow in ms).
  if (!std::isfinite(c.comm_timeout_seconds) || c.comm_timeout_seconds < 0.001 || c.comm_timeout_seconds > 1e9) {
    top.fail("comm_timeout_seconds", cat("is ", c.comm_timeout_seconds,
                                         "; it must be a positive, finite number of seconds (0.001 to 1e9), e.g. 300"));
  }
}

// DeepSpeed's engine (allreduce_bucket): with prescale_gradients each rank's gradient is divided
// by the world size before the sum; otherwise by gradient_predivide_factor before and by
// world size / factor after. Both are one predivide here (EngineSettings::gradient_predivide_factor).
void read_predivide(const Section& top, int world, EngineSettings& c) {
  const double f = top.get_number("gradient_predivide_factor", 1.0);
  if (!(f > 0.0) || f > 3.4e38) {
    top.fail("gradient_predivide_factor", cat("is ", f, "; it must be a positive number (1 divides only once, after the sum)"));
  }
  c.gradient_predivide_factor = top.get_bool("prescale_gradients", false) ? world : f;
}

void read_disabled_sections(const Section& top) {
  const std::vector<std::pair<const char*, const char*>> disabled_only = {
      {"amp", "NVIDIA Apex mixed precision"},          {"autotuning", "DeepSpeed's autotuner"},
      {"elasticity", "elastic training"},              {"nebula", "Nebula checkpointing"},
      {"hybrid_engine", "the RLHF hybrid engine"},     {"torch_autocast", "torch.autocast mixed precision"},
      {"curriculum_learning", "curriculum learning"},  {"progressive_layer_drop", "progressive layer dropping"},
      {"eigenvalue", "eigenvalue computation"},        {"data_efficiency", "DeepSpeed's data sampling and routing"}};
  for (const auto& [key, what] : disabled_only) read_disabled_only(top, key, what);
}

// The combinations of the settings read (stage and offload, the delayed update, precision ...):
// the engine's own validation, each problem under the key it is about.
void check_combinations(const Section& top, const EngineSettings& s, int world_size) {
  for (const SettingProblem& p : settings_problems(s)) top.fail(p.key, p.what);
  for (const SettingProblem& p : world_problems(s, world_size)) top.fail(p.key, p.what);
}

void check_depth(const nlohmann::json& j, const ConfigOptions& options) {
  const std::string where = options.source.empty() ? std::string("the config") : options.source;
  if (nesting_depth(j) > kMaxConfigDepth) {
    throw ConfigError(cat("[config] ", where, " nests objects or arrays more than ", kMaxConfigDepth,
                          " deep; a DeepSpeed config nests 4 levels: check the file"));
  }
}

}  // namespace

TrainConfig parse_config(const nlohmann::json& j, int world_size, const ConfigOptions& options) {
  if (world_size < 1) throw ConfigError(cat("[config] world size must be at least 1, not ", world_size));
  check_depth(j, options);
  TrainConfig c;
  ReadLog log;
  log.strict = options.strict;
  const Section top(j, "", top_rules(), &log);
  AutoContext ctx;
  attempt(log, [&] { read_clipping(top, c.engine); });
  attempt(log, [&] { read_top_scalars(top, c); });
  attempt(log, [&] { c.model = read_model(top); });
  attempt(log, [&] { read_activation_checkpointing(top, c.model); });
  attempt(log, [&] { read_batch(top, world_size, c); });
  attempt(log, [&] { read_optimizer(top, c.engine, c.optimizer_type); });
  ctx.train_steps = c.train_steps, ctx.lr = c.engine.adam.lr, ctx.hidden = c.model.is_llama() ? c.model.llama.hidden : c.model.shape.channels;
  attempt(log, [&] { c.scheduler = read_scheduler(top, ctx); });
  attempt(log, [&] { read_zero(top, ctx, c.engine); });
  attempt(log, [&] { read_precision(top, c.engine.precision); });
  attempt(log, [&] { read_communication(top, c); });
  attempt(log, [&] { read_disabled_sections(top); });
  attempt(log, [&] { read_predivide(top, world_size, c.engine); });
  attempt(log, [&] { check_combinations(top, c.engine, world_size); });
  attempt(log, [&] { c.data = read_data(top, c.seed); });
  attempt(log, [&] { c.checkpoints = read_train_checkpoints(top); });
  attempt(log, [&] { c.eval = read_train_eval(top); });
  if (!log.problems.empty()) throw_problems(log.problems, options.source);
  c.ignored_keys = log.ignored;
  std::sort(c.ignored_keys.begin(), c.ignored_keys.end());
  c.unknown_keys = log.unknown;
  c.auto_values = log.autos;
  return c;
}

// The same readers as parse_config's, in the same order, for the engine's settings alone.
EngineSettings parse_engine_settings(const nlohmann::json& j, int world_size, std::int64_t hidden, const ConfigOptions& options) {
  if (world_size < 1) throw ConfigError(cat("[config] world size must be at least 1, not ", world_size));
  check_depth(j, options);
  EngineSettings s;
  std::string type_name;
  ReadLog log;
  log.strict = options.strict;
  const Section top(j, "", top_rules(), &log);
  AutoContext ctx;
  ctx.hidden = hidden;
  attempt(log, [&] { read_clipping(top, s); });
  attempt(log, [&] { read_optimizer(top, s, type_name); });
  attempt(log, [&] { read_zero(top, ctx, s); });
  attempt(log, [&] { read_precision(top, s.precision); });
  attempt(log, [&] { read_predivide(top, world_size, s); });
  attempt(log, [&] { check_combinations(top, s, world_size); });
  if (!log.problems.empty()) throw_problems(log.problems, options.source);
  return s;
}

std::vector<std::string> known_config_keys() {
  std::vector<std::string> keys;
  auto add = [&](const std::string& prefix, const std::vector<KeyRule>& rules) {
    for (const KeyRule& r : rules) keys.push_back(prefix + r.name);
  };
  add("", top_rules());
  add("zero_optimization.", zero_rules());
  add("zero_optimization.offload_optimizer.", offload_rules(true));
  add("zero_optimization.offload_param.", offload_rules(false));
  add("optimizer.params.", adam_param_rules());
  for (const auto& rules : {lamb_param_rules(), onebit_adam_param_rules(false), onebit_adam_param_rules(true)})  // their own keys; the rest are Adam's too
    for (const KeyRule& r : rules)
      if (std::find(keys.begin(), keys.end(), "optimizer.params." + r.name) == keys.end()) keys.push_back("optimizer.params." + r.name);
  add("activation_checkpointing.", activation_checkpointing_rules());
  add("train_checkpoints.", train_checkpoints_rules());
  add("train_eval.", train_eval_rules());
  return keys;
}

}  // namespace zero
