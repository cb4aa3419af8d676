#include "cli/train.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "backends/facts.h"
#include "backends/registry.h"
#include "checkpoint/directory.h"
#include "cli/ckpt.h"
#include "cli/flags.h"
#include "cli/init_from.h"
#include "cli/launch.h"
#include "cli/traffic_formula.h"
#include "cli/layout.h"
#include "cli/mfu.h"
#include "cli/stop_signal.h"
#include "common/error.h"
#include "common/input_file.h"
#include "common/output_file.h"
#include "common/trace.h"
#include "config/config.h"
#include "data/tokenizer.h"
#include "model/hf_config_reader.h"
#include "data/load.h"
#include "engine/quantized_reduce_scatter.h"
#include "train/trainer.h"

namespace zero::cli {

std::vector<FlagSpec> train_flags() {
  return {{"config", "DeepSpeed-style JSON config (ds_config.json); without it, a small built-in GPT setup", true, ""},
          {"ranks", "data-parallel ranks: launches `mpirun -np N` itself (or N thread ranks with --comm threads)", true, "1"},
          {"oversubscribe", "with --ranks N, start the ranks even beyond 4 per hardware thread of this machine", false, ""},
          {"hostfile", "with --ranks N, start the ranks on the hosts of this Open MPI hostfile (HOST slots=K per line), each "
                       "checked first to answer the launcher agent (ssh, or OMPI_MCA_plm_rsh_agent)", true, ""},
          {"host-timeout", "seconds each --hostfile host has to answer before the run is refused", true, "10"},
          {"ranks-per-node", "--comm threads: arrange the thread ranks as nodes of this many consecutive ranks (the traffic's "
                             "inside/across-node split; under MPI the nodes are the machines)", true, ""},
          {"comm", "backend: auto (mpi under mpirun, else launch mpirun for --ranks > 1), mpi, threads", true, "auto"},
          {"stage", "ZeRO stage 0-3 (overrides zero_optimization.stage)", true, ""},
          {"steps", "optimizer steps (overrides train_steps)", true, ""},
          {"data", "text file (UTF-8, byte-level tokens) or llm.c .bin tokens, or a quoted pattern of shards ('data/train_*.bin'), read in name order as one (overrides data.path)", true, ""},
          {"val-data", "a validation file of its own, in the data's format and tokenizer; all of --data then trains "
                       "(overrides data.val_path; data.val_fraction becomes 0)", true, ""},
          {"tokenizer", "how a text file becomes tokens: bytes, a GPT-2 vocab.json / encoder.json, a SentencePiece "
                        "tokenizer.model, or a directory holding one (overrides data.tokenizer)", true, "bytes"},
          {"micro-batch", "sequences per rank per micro-batch (overrides train_micro_batch_size_per_gpu)", true, ""},
          {"gradient-accumulation-steps", "micro-batches per optimizer step (overrides gradient_accumulation_steps)", true, ""},
          {"dtype", "fp32, or bf16 / fp16 mixed precision: 16-bit parameters, gradients and collectives, fp32 master and Adam "
                    "state (overrides bf16.enabled and fp16.enabled)", true, "the config's; fp32 without one"},
          {"lr", "learning rate (overrides optimizer.params.lr)", true, ""},
          {"seed", "initialisation seed (overrides seed)", true, ""},
          {"comm-timeout", "seconds a collective may wait for the other ranks before failing (overrides comm_timeout_seconds; default 300)", true, ""},
          {"determinism", "deterministic (sums in rank order: the same bits on every backend, stage and placement; the order of "
                          "collectives checked across ranks) or fast (the transport's own reduce-scatter and all-reduce, MPI's or "
                          "NCCL's order; no order check; sums may differ in the last bits)", true, "deterministic"},
          {"set", "any config key, dotted: --set zero_optimization.reduce_bucket_size=2e8 (repeatable)", true, ""},
          {"activation-checkpointing", "each GPT block keeps only its input and recomputes its forward in backward "
                                       "(model.checkpoint_activations; the activation_checkpointing section configures it)", false, ""},
          {"strict-config", "refuse top-level config keys that are not DeepSpeed's (by default they are ignored with a warning, as DeepSpeed does)", false, ""},
          {"metrics", "write one JSON object per step (all ranks' figures) to this file", true, ""},
          {"offload", "ZeRO-Offload: none, optimizer, or optimizer+param (sets zero_optimization.offload_*)", true, ""},
          {"device", cat("where the model computes and the device tier lives: ", backend_names(), " (overrides device); a GPU per rank, the rank's "
                         "local rank on its host (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID), or ZERO_CUDA_DEVICE=K"), true, default_device()},
          {"device-memory", "device tier capacity per rank, e.g. 16GiB (overrides device_memory)", true, ""},
          {"host-memory", "host memory of one node, shared by the ranks on it, e.g. 512GiB (overrides host_memory)", true, ""},
          {"trace", "write a Chrome trace (compute, communication, copies, CPU optimizer per rank) to this file", true, ""},
          {"sample", "tokens of text to generate after training (text data only; bytes with the byte tokenizer)", true, "300"},
          {"eval-every", "also print and record (--metrics) the validation loss after every N steps", true, "0"},
          {"eval-batches", "validation micro-batches per rank in each evaluation", true, "64 windows over all ranks"},
          {"save", "save sharded checkpoints into this directory (DIR/step-N/, DIR/latest); always a final one", true, ""},
          {"save-every", "also save after every N optimizer steps", true, "0"},
          {"keep", "keep only the newest K checkpoints of this run's history; never another run's (0: all)", true, "0"},
          {"init-from", "start from a Hugging Face model directory's weights (GPT-2 or LLaMA: config.json and model.safetensors, or "
                        "shards with model.safetensors.index.json; F32, F16 or BF16): the model is its config.json's, the tokenizer "
                        "its own when it holds one (overrides model.init_from; --resume's checkpoint wins over it)", true, ""},
          {"resume", "continue from a checkpoint: a --save directory (its latest) or one step-N directory, any world size or stage", true, ""}};
}

namespace {

// The setup used without --config: a small character-level GPT on the default text.
// A tokenizer other than bytes with no vocab_size of the user's (the built-in model's 256, or a
// config whose model section gives none): the model takes the tokenizer's vocabulary, as a
// Hugging Face model takes its tokenizer's, instead of refusing the run. A vocab_size the user
// gave stays, and is checked against the tokenizer later.
void default_vocab_to_tokenizer(nlohmann::json& j, const nlohmann::json& file_model, const Flags& flags, std::vector<std::string>& notes) {
  if (flags.has("init-from") || (j.contains("model") && j["model"].contains("init_from"))) return;  // the directory's model
  if (file_model.contains("vocab_size")) return;
  for (const std::string& assignment : flags.get_all("set")) {
    const std::string key = assignment.substr(0, assignment.find('='));
    if (key == "model" || key == "model.vocab_size") return;
  }
  if (!j.contains("data") || !j["data"].contains("tokenizer") || !j["data"]["tokenizer"].is_string()) return;
  const std::string spec = j["data"]["tokenizer"].get<std::string>();
  if (spec.empty() || spec == "bytes") return;
  const std::size_t size = data::open_tokenizer(spec)->vocab_size();
  j["model"]["vocab_size"] = size;
  notes.push_back(cat("model.vocab_size -> ", size, " (the tokenizer's, as no vocab_size was given)"));
}

nlohmann::json default_config() {
  return {{"train_micro_batch_size_per_gpu", 8},
          {"gradient_accumulation_steps", 1},
          {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 2e-3}, {"betas", {0.9, 0.95}}, {"eps", 1e-8}, {"weight_decay", 0.1}}}}},
          // No warmup_max_lr: WarmupLR then warms up to the optimizer's lr, which --lr sets.
          {"scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_min_lr", 0}, {"warmup_num_steps", 20}, {"warmup_type", "linear"}}}}},
          {"gradient_clipping", 1.0},
          {"steps_per_print", 10},
          {"zero_optimization", {{"stage", 1}}},
          {"train_steps", 200},
          {"model", {{"type", "gpt"}, {"vocab_size", 256}, {"n_ctx", 64}, {"n_embd", 128}, {"n_layer", 4}, {"n_head", 4}}}};
}

// Whether the document holds "auto" at the dotted key.
bool is_auto_at(const nlohmann::json& j, const std::string& dotted) {
  std::string pointer = "/" + dotted;
  std::replace(pointer.begin(), pointer.end(), '.', '/');
  const nlohmann::json::json_pointer p(pointer);
  return j.is_object() && j.contains(p) && j.at(p) == "auto";
}

// --lr sets optimizer.params.lr, but WarmupLR and WarmupDecayLR warm up to their own
// warmup_max_lr when the config gives one as a number (WarmupDecayLR to 0.001 when it gives
// none), so the flag would change nothing. As the Hugging Face Trainer does for a config whose
// warmup_max_lr disagrees with its --learning_rate, refuse the pair instead of dropping one.
void check_lr_takes_effect(const TrainConfig& c, bool max_lr_is_auto, const std::string& flag) {
  const Schedule& s = c.scheduler;
  if (s.type != ScheduleType::warmup && s.type != ScheduleType::warmup_decay) return;
  if (max_lr_is_auto || !s.warmup_max_lr || static_cast<float>(*s.warmup_max_lr) == c.engine.adam.lr) return;
  throw ConfigError(cat("[cli] --lr ", flag, " sets optimizer.params.lr, but the scheduler warms up to scheduler.params.warmup_max_lr = ",
                        *s.warmup_max_lr, s.type == ScheduleType::warmup_decay ? " (WarmupDecayLR's default when the key is absent)" : "",
                        ", so --lr would change nothing: set warmup_max_lr to \"auto\" (it then follows --lr) or to the rate you want, ",
                        "and leave --lr out"));
}

TrainConfig build_config(const Flags& flags, int world_size, std::string* document = nullptr) {
  nlohmann::json j = default_config();
  if (!flags.get("config").empty()) j = read_config_file(flags.get("config"));  // syntax, duplicates
  const nlohmann::json file_model = flags.get("config").empty() ? nlohmann::json() : j.value("model", nlohmann::json());
  const std::pair<const char*, const char*> simple[] = {{"stage", "zero_optimization.stage"}, {"steps", "train_steps"},
                                                         {"micro-batch", "train_micro_batch_size_per_gpu"},
                                                         {"gradient-accumulation-steps", "gradient_accumulation_steps"},
                                                         {"lr", "optimizer.params.lr"}, {"seed", "seed"},
                                                         {"comm-timeout", "comm_timeout_seconds"}};
  std::vector<std::string> from_flags;  // "auto" values that a flag gives, as the Trainer's flags give them
  std::vector<std::pair<std::string, std::string>> flag_keys;  // (dotted key, the flag that set it)
  auto set_from_flag = [&](const std::string& flag, const std::string& key, const std::string& value) {
    apply_override(j, key, value);
    flag_keys.emplace_back(key, flag);
  };
  for (const auto& [flag, key] : simple) {
    if (!flags.has(flag)) continue;
    if (is_auto_at(j, key)) from_flags.push_back(cat(key, " = \"auto\" -> ", flags.get(flag), " (from --", flag, ")"));
    apply_override(j, cat(key, "=", flags.get(flag)));
    flag_keys.emplace_back(key, flag);
  }
  if (flags.has("data")) set_from_flag("data", "data.path", flags.get("data"));
  if (flags.has("tokenizer")) set_from_flag("tokenizer", "data.tokenizer", flags.get("tokenizer"));
  if (flags.has("init-from")) set_from_flag("init-from", "model.init_from", flags.get("init-from"));
  if (flags.has("val-data")) set_from_flag("val-data", "data.val_path", flags.get("val-data"));
  if (flags.has("activation-checkpointing")) {
    apply_override(j, "model.checkpoint_activations=true");
    flag_keys.emplace_back("model.checkpoint_activations", "activation-checkpointing");
  }
  if (flags.has("dtype")) {
    const std::string dtype = flags.get("dtype");
    if (dtype != "fp32" && dtype != "bf16" && dtype != "fp16") throw ConfigError(cat("[cli] --dtype '", dtype, "': use fp32, bf16 or fp16"));
    // The named type's section on, the other's off where the config has one (a section it lacks stays absent).
    for (const char* type : {"bf16", "fp16"}) {
      flag_keys.emplace_back(cat(type, ".enabled"), "dtype");  // --dtype decides both, so --set may name neither
      if (dtype == type || j.contains(type)) apply_override(j, cat(type, ".enabled"), nlohmann::json(dtype == type));
    }
  }
  if (flags.has("device")) set_from_flag("device", "device", flags.get("device"));
  if (flags.has("device-memory")) set_from_flag("device-memory", "device_memory", flags.get("device-memory"));
  if (flags.has("host-memory")) set_from_flag("host-memory", "host_memory", flags.get("host-memory"));
  if (flags.has("offload")) {
    const std::string o = flags.get("offload");
    if (o != "none" && o != "optimizer" && o != "optimizer+param") {
      throw ConfigError(cat("[cli] --offload must be none, optimizer or optimizer+param, not '", o, "'"));
    }
    set_from_flag("offload", "zero_optimization.offload_optimizer.device", o == "none" ? "none" : "cpu");
    set_from_flag("offload", "zero_optimization.offload_param.device", o == "optimizer+param" ? "cpu" : "none");
  }
  // --set runs last; where it names a key a flag above set (or a section around it), one of the
  // two would be dropped without a word: refuse instead.
  auto overlap = [](const std::string& a, const std::string& b) {
    return a == b || b.rfind(a + ".", 0) == 0 || a.rfind(b + ".", 0) == 0;
  };
  for (const std::string& assignment : flags.get_all("set")) {
    const std::string key = assignment.substr(0, assignment.find('='));
    for (const auto& [flag_key, flag] : flag_keys) {
      if (overlap(key, flag_key)) {
        throw ConfigError(cat("[cli] --set ", assignment, " and --", flag, " both set ", flag_key, ": give one of them"));
      }
    }
    apply_override(j, assignment);
  }
  default_vocab_to_tokenizer(j, file_model, flags, from_flags);
  apply_init_from_flags(j, file_model, flags);  // the model and tokenizer of --init-from's directory
  ConfigOptions options;
  options.strict = flags.has("strict-config");
  options.source = flags.get("config");
  TrainConfig c = parse_config(j, world_size, options);
  if (flags.has("lr")) check_lr_takes_effect(c, is_auto_at(j, "scheduler.params.warmup_max_lr"), flags.get("lr"));
  c.auto_values.insert(c.auto_values.begin(), from_flags.begin(), from_flags.end());
  if (document) *document = j.dump();  // recorded in checkpoints
  return c;
}

std::string mib(std::uint64_t bytes) { return format_bytes(bytes); }

void print_step(const StepMetrics& m, std::int64_t total, int every) {
  std::uint64_t dev = 0, dev_peak = 0, host = 0, host_peak = 0, sent = 0, across = 0, nvme = 0;
  for (const RankFigures& f : m.ranks) {
    nvme = std::max(nvme, f.total_current[static_cast<int>(Tier::kNvme)]);
    dev = std::max(dev, f.total_current[0]), dev_peak = std::max(dev_peak, f.total_peak[0]);
    host = std::max(host, f.total_current[1]), host_peak = std::max(host_peak, f.total_peak[1]);
    std::uint64_t s = 0, a = 0;
    for (int k = 0; k < kNumCollectives; ++k) s += f.sent[k], a += f.sent_across[k];
    sent = std::max(sent, s), across = std::max(across, a);
  }
  const std::string across_text = across > 0 ? cat(" (", mib(across), " across nodes)") : "";
  int launched = 1;  // under mpirun, rank 0's stdout is mpirun's pty whatever the user's is
  const bool tty = isatty(fileno(stdout)) && !launched_by_mpi(&launched);
  if (m.step % every == 0 || m.step == 1 || m.step == total) {
    const std::string swapped = nvme > 0 ? " | nvme " + mib(nvme) : "";  // the swap files, with the NVMe tier
    std::printf("%sstep %6lld/%lld | loss %.4f | lr %.2e | grad norm %.3f | %9.0f tok/s | %7.1f ms | device %s/%s | host %s/%s%s | sent %s%s\n",
                tty ? "\r\033[K" : "", static_cast<long long>(m.step), static_cast<long long>(total), m.loss, m.lr,
                m.grad_norm, m.tokens_per_second, m.step_seconds * 1e3, mib(dev).c_str(), mib(dev_peak).c_str(),
                mib(host).c_str(), mib(host_peak).c_str(), swapped.c_str(), mib(sent).c_str(), across_text.c_str());
    if (m.skipped || m.loss_scale != 1.0f) {
      std::printf("        loss scale %g%s | %lld steps skipped so far\n", m.loss_scale,
                  m.skipped ? " (overflow: step skipped)" : "", static_cast<long long>(m.skipped_steps));
    }
  } else if (tty) {
    const int width = 30, done = static_cast<int>(width * m.step / total);
    std::printf("\r[%s%s] %lld/%lld loss %.4f", std::string(done, '#').c_str(), std::string(width - done, '.').c_str(),
                static_cast<long long>(m.step), static_cast<long long>(total), m.loss);
  }
  if (m.val_loss >= 0) {
    std::printf("%sstep %6lld/%lld | validation loss %.4f\n", tty ? "\r\033[K" : "", static_cast<long long>(m.step),
                static_cast<long long>(total), m.val_loss);
  }
  std::fflush(stdout);
}

// "fp32", "bf16 (fp32 master and Adam state)", "fp16 (fp32 master and Adam state, dynamic loss scale 2^16)".
std::string precision_label(const TrainConfig& c) {
  if (!c.bf16() && !c.fp16()) return "fp32";
  std::string s = cat(c.bf16() ? "bf16" : "fp16", " mixed precision (fp32 master and Adam state");
  if (c.fp16()) {
    s += c.engine.precision.loss_scaler.dynamic() ? cat(", dynamic loss scale from 2^", c.engine.precision.loss_scaler.initial_scale_power)
                                 : cat(", static loss scale ", c.engine.precision.loss_scaler.static_scale);
  }
  s += ")";
  // Where the matrix products' precision is a question: bf16 products, or f32 ones on a CPU without
  // bf16 instructions (and always in an fp16 run).
  if (const auto describe = find_backend(c.device).describe_matmul; describe != nullptr) {
    s += ", " + describe(c.bf16() ? Dtype::kBf16 : Dtype::kF32);
  }
  return s;
}

// The bytes of a --metrics file that a resumed run keeps before it writes step `next`: the lines of
// the steps before it. A run killed after its last checkpoint, or the later steps of a run resumed
// from an older step-N, wrote steps the resumed run writes again; a line the kill cut short goes
// with them. (Appending everything left steps twice in the file.)
std::uint64_t metrics_kept_bytes(const std::string& text, std::int64_t next) {
  std::size_t kept = 0;
  while (kept < text.size()) {
    const std::size_t end = text.find('\n', kept);
    if (end == std::string::npos) break;
    const nlohmann::json line = nlohmann::json::parse(text.begin() + static_cast<std::ptrdiff_t>(kept),
                                                      text.begin() + static_cast<std::ptrdiff_t>(end), nullptr, false);
    if (!line.is_object() || !line.contains("step") || !line["step"].is_number_integer() || line["step"].get<std::int64_t>() >= next) break;
    kept = end + 1;
  }
  return kept;
}

// 16 hex digits: a 64-bit value as JSON text, which no JSON reader rounds to a double.
std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

nlohmann::json metrics_json(const StepMetrics& m) {
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    const RankFigures& f = m.ranks[r];
    nlohmann::json mem, sent, across;
    for (int t = 0; t < kNumTiers; ++t) {
      nlohmann::json cur, peak;
      for (int c = 0; c < kNumCategories; ++c) {
        cur[category_name(static_cast<Category>(c))] = f.current[t][c];
        peak[category_name(static_cast<Category>(c))] = f.peak[t][c];
      }
      mem[tier_name(static_cast<Tier>(t))] = {{"current", cur}, {"peak", peak}, {"total_current", f.total_current[t]}, {"total_peak", f.total_peak[t]}};
    }
    for (int k = 0; k < kNumCollectives; ++k) {
      sent[collective_name(static_cast<Collective>(k))] = f.sent[k];
      across[collective_name(static_cast<Collective>(k))] = f.sent_across[k];
    }
    ranks.push_back({{"rank", r}, {"loss", f.loss}, {"memory_bytes", mem}, {"sent_bytes", sent}, {"sent_across_nodes_bytes", across}});
  }
  return {{"step", m.step}, {"loss", m.loss}, {"lr", m.lr}, {"grad_norm", m.grad_norm}, {"loss_scale", m.loss_scale},
          {"skipped", m.skipped}, {"skipped_steps", m.skipped_steps}, {"step_seconds", m.step_seconds},
          {"tokens_per_second", m.tokens_per_second}, {"val_loss", m.val_loss >= 0 ? nlohmann::json(m.val_loss) : nlohmann::json()},
          {"batch_digest", hex64(m.batch_digest)},
          {"ranks", ranks}};
}

void print_overlap(const TrainResult& r, int ranks, bool clipping) {
  double sum = 0;
  int n = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    const double f = overlap_fraction(r.trace, rank, Lane::kOptimizer, Lane::kCompute);
    if (f >= 0) sum += f, ++n;
  }
  if (n > 0) {
    std::printf("CPU optimizer time overlapped with device compute: %.1f%% (mean over %d ranks, from the trace)%s\n", 100 * sum / n, n,
                clipping ? "; gradient clipping is on, so Adam waits for the global norm instead of starting during backward" : "");
  }
}

// What --init-from read: every rank reads only the elements it holds (its slices at stages 1-3).
void print_init_from(const TrainConfig& c, const TrainResult& r) {
  if (r.init_from_bytes.empty()) return;
  std::uint64_t total = 0, most = 0;
  for (std::uint64_t b : r.init_from_bytes) total += b, most = std::max(most, b);
  std::printf("init-from %s: %s of weights; bytes read per rank: rank 0 %llu, max %llu, total %llu (%.2f x the weights); "
              "rank 0 loaded in %.0f ms\n", c.model.init_from.c_str(), mib(r.init_from_weight_bytes).c_str(),
              static_cast<unsigned long long>(r.init_from_bytes[0]), static_cast<unsigned long long>(most),
              static_cast<unsigned long long>(total), static_cast<double>(total) / std::max<std::uint64_t>(1, r.init_from_weight_bytes),
              r.init_from_seconds * 1e3);
}

// hpZ's fit to the nodes of thread ranks (one node, or --ranks-per-node), before they start; under
// MPI the nodes are known once the ranks run, and the engine checks them there.
void check_thread_nodes(const Flags& flags, const PlannedWorld& world, const EngineSettings& settings) {
  if (world.backend != "threads") return;
  const int per_node = flags.has("ranks-per-node") ? static_cast<int>(flags.get_int("ranks-per-node", 1, world.size)) : world.size;
  std::vector<int> nodes;
  for (int first = 0; first < world.size; first += per_node) nodes.push_back(std::min(per_node, world.size - first));
  check_nodes(settings, nodes, "config");
}

// Rank 0's traffic in the last step, inside its node and across, beside the formula's.
void print_traffic(const TrainConfig& c, const TrainResult& r) {
  const int n = static_cast<int>(r.final_ranks.size());
  if (n < 2) return;
  std::uint64_t sent = 0, across = 0;
  for (int k = 0; k < kNumCollectives; ++k) sent += r.final_ranks[0].sent[k], across += r.final_ranks[0].sent_across[k];
  const bool qgz = c.engine.zero_quantized_gradients && r.ranks_per_node < n;  // on one node, the exact reduce-scatter
  const TrafficFormula f = step_traffic_formula(c.engine.stage, n, r.shard_group, r.ranks_per_node, 0, r.padded_parameters,
                                                dtype_bytes(c.engine.precision.compute), c.gradient_accumulation_steps,
                                                {c.engine.quantized_weights, c.engine.hpz_partition_size, qgz});
  const std::string zeropp = cat(c.engine.quantized_weights ? ", qwZ" : "", c.engine.hpz_partition_size > 1 ? cat(", H=", c.engine.hpz_partition_size) : "",
                                 qgz ? ", qgZ" : "");
  std::printf("traffic of rank 0 in the last step (N=%d, G=%d, %d ranks per node, m=%d%s): %s\n", n, r.shard_group, r.ranks_per_node,
              c.gradient_accumulation_steps, zeropp.c_str(), describe_step_traffic(f, sent, across, "sent").c_str());
}

void print_summary(const TrainConfig& c, const TrainResult& r) {
  std::printf("\nsummary: %lld steps, %.1f ms/step, %.0f tokens/s; train loss %.4f -> %.4f", static_cast<long long>(r.last_step - r.first_step),
              r.mean_step_seconds * 1e3, r.tokens_per_second, r.losses.front(), r.losses.back());
  const BackendFacts& facts = find_facts(c.device);
  if (facts.peak_bf16 > 0) {  // cli/mfu.h: one device per rank
    std::printf("\nmodel FLOPs utilisation: %.1f%% of %s dense bf16 peak (%.0f TFLOP/s; 6N + 12LCT = %.3g FLOPs a token)",
                100 * model_flops_utilisation(r.tokens_per_second / static_cast<double>(std::max<std::size_t>(1, r.final_ranks.size())), c.model,
                                              facts.peak_bf16),
                facts.peak_label.c_str(), facts.peak_bf16 / 1e12, model_flops_per_token(c.model));
  }
  if (r.final_val_loss >= 0) std::printf("; validation loss %.4f -> %.4f", r.first_val_loss, r.final_val_loss);
  if (c.fp16()) std::printf("\nfp16: %lld steps skipped on gradient overflow; final loss scale %g", static_cast<long long>(r.skipped_steps),
                          r.final_loss_scale);
  std::printf("\ndata: %s; reading rank 0's batches took %.3g ms a step (%.2g%% of the step)\n", r.data_source.c_str(),
              1e3 * r.mean_batch_read_seconds,
              r.mean_step_seconds > 0 ? 100 * r.mean_batch_read_seconds / r.mean_step_seconds : 0.0);
  std::uint64_t peak = 0;
  for (const RankFigures& f : r.final_ranks) peak = std::max(peak, f.total_peak[0]);
  std::printf("peak device-tier memory per rank: %s; final weights sha256 %s\n", mib(peak).c_str(), r.weights_sha256.c_str());
  std::uint64_t host_peak = 0;
  for (const RankFigures& f : r.final_ranks) host_peak = std::max(host_peak, f.total_peak[static_cast<int>(Tier::kHost)]);
  if (host_peak > 0) {  // offload: what the ledger counted in host memory, beside what the kernel measured of this process
    std::printf("peak host-tier memory per rank: %s (the ledger); peak resident set of this process: %s\n", mib(host_peak).c_str(),
                mib(peak_rss_bytes()).c_str());
  }
  print_traffic(c, r);
  print_init_from(c, r);
  if (!r.sample.empty()) std::printf("\nsample:\n%s\n", r.sample.c_str());
}

// --NAME's value if given (noted in `overrides` when it replaces the file's `key`), else the file's.
long long flag_over_file(const Flags& flags, const char* name, long long min, long long max, long long file, const char* key,
                         std::vector<std::string>& overrides) {
  if (!flags.has(name)) return file;
  const long long v = flags.get_int(name, min, max);
  if (file != 0 && v != file) overrides.push_back(cat("--", name, " ", v, " overrides ", key, " = ", file));
  return v;
}

// The run's options for a world of `world_size` ranks, from the flags (and the config they name).
TrainOptions train_options(const Flags& flags, int world_size) {
  TrainOptions o;
  o.config = build_config(flags, world_size, &o.checkpoints.config_json);
  o.data_path = o.config.data.path.empty() ? data::default_text_path() : o.config.data.path;
  o.sample_chars = static_cast<int>(flags.get_int("sample", 0, 100000));
  o.sample_requested = flags.has("sample");
  // The flags over the config's train_eval and train_checkpoints sections; each override is printed.
  const EvalSection& eval = o.config.eval;
  o.eval_every = flag_over_file(flags, "eval-every", 0, 1LL << 40, eval.every, "train_eval.every", o.config_overrides);
  const long long batches = flag_over_file(flags, "eval-batches", 1, 1 << 20, eval.batches, "train_eval.batches", o.config_overrides);
  if (batches > 0 && !o.config.data.has_validation()) {
    throw ConfigError(cat("[train] --eval-batches (train_eval.batches) ", batches, " sizes each evaluation of the held-out split, but ",
                          "data.val_fraction is 0, so nothing is held out: set data.val_fraction (e.g. 0.05) or data.val_path "
                          "(--val-data), or leave --eval-batches out"));
  }
  if (batches > 0) o.val_windows = static_cast<int>(batches) * world_size * o.config.micro_batch_size;
  CheckpointFlags ck;
  if (flags.has("save")) ck.save = flags.get("save");
  if (flags.has("save-every")) ck.save_every = flags.get_int("save-every", 0, 1LL << 40);
  if (flags.has("keep")) ck.keep = static_cast<int>(flags.get_int("keep", 0, 1 << 20));
  if (flags.has("resume")) ck.resume = flags.get("resume");
  apply_checkpoint_settings(o.config.checkpoints, ck, o.checkpoints, o.config_overrides);
  o.trace = !flags.get("trace").empty() || o.config.engine.offload.optimizer;
  return o;
}

// The files a run reads, which no output may be.
std::vector<NamedPath> run_inputs(const Flags& flags, const TrainOptions& o) {
  std::vector<NamedPath> inputs = {{"the config file", flags.get("config")}};
  for (const auto& [what, path] : {std::pair{"the data file", o.data_path}, std::pair{"the validation file", o.config.data.val_path}}) {
    if (path.empty()) continue;
    for (const std::string& f : data::data_files(path)) inputs.push_back({what, f});  // a pattern: each file it matches
  }
  return inputs;
}

std::vector<NamedPath> run_outputs(const Flags& flags) {
  return {{"--metrics", flags.get("metrics")}, {"--trace", flags.get("trace")}};
}

void print_header(const TrainConfig& c, const Communicator& comm) {
  std::printf("zero train: %s (%lld parameters), ZeRO stage %d, %d ranks (%s), batch %d = %d x %d x %d ranks, %lld steps, %s, optimizer %s\n",
              c.model.describe().c_str(), static_cast<long long>(c.model.num_parameters()), c.engine.stage,
              comm.size(), comm.backend().c_str(), c.train_batch_size, c.micro_batch_size, c.gradient_accumulation_steps,
              comm.size(), static_cast<long long>(c.train_steps), precision_label(c).c_str(), c.optimizer_type.c_str());
  if (!c.model.init_from.empty()) {  // the model is config.json's (checked before any rank started)
    const HfModelConfig hf = read_hf_config(c.model.init_from);
    std::printf("init-from: %s, the model of %s; tokenizer %s\n", c.model.init_from.c_str(), hf.path.c_str(),
                data::open_tokenizer(c.data.tokenizer)->describe().c_str());
    for (const std::string& note : hf.notes) std::printf("init-from: %s\n", note.c_str());
  }
  for (const std::string& k : c.ignored_keys) std::printf("config: %s has no effect here and is ignored\n", k.c_str());
  for (const std::string& k : c.unknown_keys) {
    std::printf("config: warning: '%s' is not a DeepSpeed key; ignored, as DeepSpeed ignores it (--strict-config refuses it)\n", k.c_str());
  }
  for (const std::string& a : c.auto_values) std::printf("config: %s\n", a.c_str());
}

// The exit code of a run: 0 when it ran to the end; after a stop signal, kExitPreempted with
// --save (its checkpoint published), 128 + the signal's number without.
int stop_code(const TrainOptions& o, const TrainResult& r) {
  if (!r.stopped_by_signal) return 0;
  return o.checkpoints.save_dir.empty() ? 128 + r.stopped_by_signal : kExitPreempted;
}

// After a stop signal (rank 0): what happened and what to do next.
int report_stop(const TrainOptions& o, const TrainResult& r) {
  const int code = stop_code(o, r);
  const std::string& dir = o.checkpoints.save_dir;
  if (r.last_step == r.first_step) {  // stopped during the start-up
    std::printf("stopped by %s before the first step (at step %lld of %lld): nothing new to save (exit %d)\n",
                stop_signal_name(r.stopped_by_signal), static_cast<long long>(r.first_step),
                static_cast<long long>(o.config.train_steps), code);
    return code;
  }
  std::printf("stopped by %s after step %lld of %lld; %s (exit %d)\n", stop_signal_name(r.stopped_by_signal),
              static_cast<long long>(r.last_step), static_cast<long long>(o.config.train_steps),
              dir.empty() ? "nothing saved (no --save)"
                          : cat("checkpoint step ", r.last_step, " published in ", dir, ": continue with --resume ", dir).c_str(),
              code);
  return code;
}

// One rank's run. Rank 0 checks the output paths before training (a bad path fails now); it
// appends each step's --metrics line as the step ends (a killed run keeps them; with --resume,
// after the lines already in the file) and publishes the trace complete at the end. The last
// step's line waits for the final validation loss, its val_loss, so that the file holds the
// run's result (it is written if that evaluation fails, too).
int train_rank(const Flags& flags, Communicator& comm, Ledger& ledger) {
  TrainOptions o = train_options(flags, comm.size());
  o.ledger = &ledger;
  o.on_note = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  const TrainConfig& c = o.config;
  comm.set_timeout(std::chrono::milliseconds(std::llround(c.comm_timeout_seconds * 1000)));
  comm.set_determinism(parse_determinism(flags.get("determinism"), "--determinism"));
  o.stop_requested = [] { return stop_signal(); };
  std::optional<OutputLog> metrics;
  std::optional<StepMetrics> last_line;  // the last step's --metrics line, until the final validation loss
  std::optional<OutputFile> trace;
  const std::vector<RankPlace> places = gather_places(comm);  // every rank: a collective
  if (comm.rank() == 0) {
    print_header(c, comm);
    std::printf("%s", describe_layout(places, comm.backend()).c_str());
    for (const std::string& w : layout_warnings(places)) std::printf("%s\n", w.c_str());
    for (const std::string& s : o.config_overrides) std::printf("config: %s\n", s.c_str());
    std::fflush(stdout);  // in the log now, not at the first step (the start-up can take minutes)
    if (!flags.get("metrics").empty()) {
      metrics.emplace(NamedPath{"--metrics", flags.get("metrics")}, run_inputs(flags, o), !o.checkpoints.resume.empty());
    }
    if (!flags.get("trace").empty()) trace.emplace(NamedPath{"--trace", flags.get("trace")}, run_inputs(flags, o));
    o.on_step = [&, first = true](const StepMetrics& m) mutable {
      if (metrics && first && !o.checkpoints.resume.empty()) {  // the file goes on from the resumed step
        metrics->truncate(metrics_kept_bytes(read_input_file({metrics->path(), "cli", "--metrics file"}), m.step));
      }
      first = false;
      if (metrics && m.step == c.train_steps) last_line = m;
      else if (metrics) metrics->write(metrics_json(m).dump() + "\n");  // first: a printed step is in the file
      print_step(m, c.train_steps, c.steps_per_print);
    };
  }
  const auto write_last_line = [&](float final_val_loss) {
    if (!last_line) return;
    if (final_val_loss >= 0) last_line->val_loss = final_val_loss;
    metrics->write(metrics_json(*last_line).dump() + "\n");
    last_line.reset();
  };
  TrainResult r;
  try {
    r = train(o, comm);
  } catch (...) {
    write_last_line(-1);
    throw;
  }
  write_last_line(r.final_val_loss);
  if (comm.rank() != 0) return stop_code(o, r);
  if (!r.losses.empty()) {  // a run stopped during its start-up took no step
    print_summary(c, r);
    print_overlap(r, comm.size(), c.engine.gradient_clipping > 0.0f);
  }
  if (trace) {
    trace->write(chrome_trace_json(r.trace));
    trace->commit();
    std::printf("wrote %s (open in Perfetto or chrome://tracing)\n", trace->path().c_str());
  }
  if (metrics) metrics->sync();
  return r.stopped_by_signal ? report_stop(o, r) : 0;
}

}  // namespace

int train_main(const std::vector<std::string>& args) {
  install_stop_handlers();  // a stop request from now on ends the run after a step (stop_signal.h)
  Flags flags("zero train", train_flags(), args);
  if (flags.help()) {
    std::printf("Trains a GPT with ZeRO on text (docs/training.md). On SIGTERM or SIGUSR1 (to zero, mpirun's\n"
                "SIGUSR1, or any rank) it stops after the step under way and, with --save, publishes a checkpoint and\n"
                "exits %d (without --save: 128 + the signal); a second signal stops it at once.\n\n%s",
                kExitPreempted, flags.usage().c_str());
    return 0;
  }
  // Everything the user typed is checked here, once, before mpirun or the thread ranks start: the
  // flags, the config, the data, the memory sizes and the output paths. The ranks re-check as they
  // build the run.
  const PlannedWorld world = planned_world(flags, true);
  parse_determinism(flags.get("determinism"), "--determinism");
  const TrainOptions checked = train_options(flags, world.size);
  // The launching process owns --save's directory for the whole run, taken before anything else
  // is checked so that a second run is told who holds it: for thread ranks, and for an MPI job it
  // launches (it waits for its child mpirun, which inherits the lock). A job started directly
  // under mpirun is no launcher: its rank 0 takes the directory (Saver).
  int launched = 1;
  std::shared_ptr<checkpoint::DirectoryLock> owner;
  if (!checked.checkpoints.save_dir.empty() && !launched_by_mpi(&launched)) {
    owner = checkpoint::lock_save_directory(checked.checkpoints.save_dir, wants_mpi_job(flags));
  }
  check_train_options(checked, world.size, world.backend);
  check_thread_nodes(flags, world, checked.config.engine);
  // qgZ's nodes must be even: thread ranks' here; MPI's, known only once the ranks run, in the engine.
  if (checked.config.engine.zero_quantized_gradients && world.backend == "threads" && flags.has("ranks-per-node")) {
    const int per_node = static_cast<int>(flags.get_int("ranks-per-node", 1, world.size));
    QuantizedReduceScatter::check_nodes(block_topology(0, world.size, per_node), world.size);
  }
  check_output_paths(run_outputs(flags), run_inputs(flags, checked));
  if (stop_signal() != 0) {  // during the checks: no rank has started, nothing to save
    std::printf("stopped by %s before training started (exit %d)\n", stop_signal_name(stop_signal()), 128 + stop_signal());
    return 128 + stop_signal();
  }
  if (wants_mpi_job(flags)) return relaunch_under_mpirun(flags, {"train"}, args);
  return run_ranks(flags, [&](Communicator& comm, Ledger& ledger) { return train_rank(flags, comm, ledger); });
}

}  // namespace zero::cli
