#include "cli/estimate.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <string_view>

#include "cli/estimate_config.h"
#include "cli/estimate_limits.h"
#include "cli/flags.h"
#include "common/error.h"
#include "common/number_text.h"
#include "common/output_file.h"
#include "planner/byte_size.h"
#include "planner/report.h"

namespace zero::cli {
namespace {

const char* kIntro =
    "Plans ZeRO stages 0-3, with and without offload, for a model on N ranks: per-rank device and host\n"
    "memory by category (parameters, gradients, optimizer state, comm buffers, gathered units, activations)\n"
    "at the peak of a step, the bytes each rank sends per step, and with offload the host<->device copies\n"
    "and their time. Marks what fits and recommends a configuration.\n"
    "\n"
    "Describe the model one way: --model NAME; or --params N --largest-unit N; or a GPT-2-style shape\n"
    "--n-embd --n-layer --n-head [--vocab --seq-len]; or a config whose \"model\" section has one.\n"
    "Memory sizes: 80GB (GB = 10^9 bytes), 80GiB (GiB = 2^30 bytes), or bytes (8e10).\n"
    "Flags override the config file's settings.\n"
    "\n"
    "  zero estimate --model gpt2-xl --ranks 8 --device-memory 80GiB\n"
    "  zero estimate --model llama2-7b --dtype bf16 --ranks 8 --device-memory 80GiB --json plan.json\n"
    "  zero estimate --config ds_config.json --ranks 16 --ranks-per-node 8 --device-memory 40GB --host-memory 512GB\n"
    "\n"
    "With --peak-tflops and --achieved-fraction it also predicts each configuration's step time, tokens/s and\n"
    "TFLOP/s per device from the links (--intra-node-bandwidth, --inter-node-bandwidth, --latency, the host\n"
    "link) and, with offload, the --host-memory-bandwidth (on the NVMe tier also --disk-read-bandwidth and\n"
    "--disk-write-bandwidth); docs/estimate.md checks it against published runs.\n"
    "\n";

}  // namespace

std::vector<FlagSpec> estimate_flags() {
  std::string models;
  for (const auto& n : named_model_names()) models += (models.empty() ? "" : ", ") + n;
  return {
      {"model", "a named model: " + models, true, ""},
      {"params", "parameter count (7e9 works); without --largest-unit the largest unit is taken as Ψ/20", true, ""},
      {"largest-unit", "parameters in the largest unit (a block, or the embedding), with --params", true, ""},
      {"vocab", "GPT-2-style shape: vocabulary size", true, "50257"},
      {"seq-len", "GPT-2-style shape: context length", true, "1024"},
      {"n-embd", "GPT-2-style shape: channels", true, ""},
      {"n-layer", "GPT-2-style shape: blocks", true, ""},
      {"n-head", "GPT-2-style shape: attention heads", true, ""},
      {"config", "read stage, offload, buckets, dtype, micro-batch (and a \"model\" section) from a DeepSpeed config", true, ""},
      {"ranks", "data-parallel ranks (devices)", true, "1"},
      {"ranks-per-node", "ranks on one machine (for host memory per node)", true, "min(ranks, 8)"},
      {"micro-batch", "sequences per rank per micro-batch (activations)", true, "1"},
      {"gradient-accumulation-steps", "micro-batches per optimizer step", true, "1"},
      {"activation-checkpointing", "each block keeps only its input and recomputes its forward in backward", false, ""},
      {"cpu-checkpointing", "with --activation-checkpointing: the kept block inputs in host memory", false, ""},
      {"dtype", "fp32, or bf16 / fp16 (also: mixed): 16-bit params and grads, fp32 master and Adam: K = 12", true, "fp32"},
      {"device-memory", "memory of one device, e.g. 80GiB", true, ""},
      {"host-memory", "host memory of one node, e.g. 512GB", true, ""},
      {"headroom", "share of each device kept free for fragmentation and the framework: a plan fits within the rest (10% or 0.1)", true, "10%"},
      {"link-bandwidth", "host<->device bandwidth (PCIe 4.0 x16: 31.5 GB/s in theory, ~25 measured)", true, "25GB/s"},
      {"comm", "backend whose scratch to count: mpi (a whole-unit reduce-scatter scratch), threads or self", true, "mpi"},
      {"stage", "tabulate and recommend only this stage (0-3), with and without offload", true, ""},
      {"peak-tflops", "one device's dense peak TFLOP/s for the run's matrix products (V100 fp16: 125): with --achieved-fraction, "
                      "predicts each configuration's step time, tokens/s and TFLOP/s per device", true, ""},
      {"achieved-fraction", "share of --peak-tflops that forward and backward sustain on one device alone, measured (Megatron-LM's "
                            "V100 GPT-2: 0.312; a CPU's: docs/estimate.md)", true, ""},
      {"memory-bandwidth", "one device's memory bandwidth, for the optimizer on the device (V100: 900GB/s)", true, ""},
      {"intra-node-bandwidth", "bytes/s one device sends to the others of its node (DGX-2's NVSwitch: 150GB/s)", true, ""},
      {"inter-node-bandwidth", "bytes/s one node sends to the others, all its NICs (8 x 100 Gbps InfiniBand: 100GB/s)", true, ""},
      {"latency", "seconds per message step of a collective (5e-6)", true, "0"},
      {"host-memory-bandwidth", "one node's host memory bandwidth, for CPU Adam with offload (DGX-2: 256GB/s)", true, ""},
      {"disk-read-bandwidth", "bytes/s one node reads from its NVMe tier (all its drives, shared by its ranks), for the "
                              "NVMe rows' step time: take zero bench io's figure (default: one PCIe 4.0 drive's rating)", true, "7GB/s"},
      {"disk-write-bandwidth", "bytes/s one node writes to its NVMe tier, as --disk-read-bandwidth", true, "5GB/s"},
      {"model-parallel", "M-way tensor parallelism inside a node, for the step time of published runs (zero does not run it): "
                         "plans --ranks / M data-parallel groups of M devices", true, "1"},
      {"comm-on-compute-cores", "the collectives run on the cores that compute (a CPU rank bound to one core, as zero bench "
                                "train runs them): the step time overlaps no communication", false, ""},
      {"delayed-update", "plan optimizer offload with the delayed parameter update (+dpu: a second host gradient shard)", false, ""},
      {"json", "also write the estimate as JSON to this file", true, ""},
  };
}

namespace {

// A positive whole count; exponents allowed (7e9), since parameter counts are written that way.
std::int64_t count_flag(const Flags& flags, const std::string& name) {
  const std::string text = flags.get(name);
  const std::optional<long double> v = parse_decimal(text);
  if (!v) throw ConfigError(cat("[estimate] --", name, " must be a number, not ", quote_input(text)));
  if (*v != std::floor(*v) || *v < 1 || *v > 9.2e18L) {
    throw ConfigError(cat("[estimate] --", name, " must be a positive whole number up to 9.2e18, not ", quote_input(text)));
  }
  return static_cast<std::int64_t>(*v);
}

int int_flag(const Flags& flags, const std::string& name) {
  const std::int64_t v = count_flag(flags, name);
  if (v > (1 << 30)) throw ConfigError(cat("[estimate] --", name, " is too large: ", v, " (at most 2^30)"));
  return static_cast<int>(v);
}

// --params without --largest-unit: the model is taken as this many equal units.
constexpr std::int64_t kAssumedUnits = 20;

ModelDescription model_from(const Flags& flags, const EstimateConfig& config) {
  const bool named = flags.has("model");
  const bool counts = flags.has("params") || flags.has("largest-unit");
  const bool shape = flags.has("n-embd") || flags.has("n-layer") || flags.has("n-head");
  if (named + counts + shape > 1) {
    throw ConfigError("[estimate] describe the model one way only: --model, or --params with --largest-unit, or "
                      "--n-embd --n-layer --n-head");
  }
  // --vocab and --seq-len complete a shape given by --n-embd --n-layer --n-head; with any other
  // description they would be ignored without a word.
  const std::string other = named    ? cat("--model ", flags.get("model"), " has its own")
                            : counts   ? std::string("--params describes no shape")
                            : config.gpt || config.llama ? cat("the model section of ", flags.get("config"), " gives the shape")
                                         : std::string();
  for (const char* f : {"vocab", "seq-len"}) {
    if (flags.has(f) && !shape && !other.empty()) {
      throw ConfigError(cat("[estimate] --", f, " completes a shape given with --n-embd --n-layer --n-head, and ", other,
                            ": leave --", f, " out, or describe the model by its shape"));
    }
  }
  if (named) return named_model(flags.get("model"));
  if (counts) {
    if (!flags.has("params")) {
      throw ConfigError("[estimate] --largest-unit needs --params: the model's parameter count");
    }
    const std::int64_t psi = count_flag(flags, "params");
    if (flags.has("largest-unit")) {
      const std::int64_t largest = count_flag(flags, "largest-unit");
      check_count_limits(psi, largest);
      return describe_counts(psi, largest);
    }
    // A typical transformer's largest unit (one block, or the embedding) is 1/19 (GPT-2 XL) to
    // 1/80 (Llama 2 70B) of the model: assume the larger end, Ψ/20, and say so.
    const std::int64_t assumed = std::max<std::int64_t>(1, (psi + kAssumedUnits - 1) / kAssumedUnits);
    check_count_limits(psi, assumed);
    ModelDescription m = describe_counts(psi, assumed);
    m.detail += cat("; largest unit assumed Ψ/", kAssumedUnits, ", as in a typical transformer (GPT-2 XL: Ψ/19, Llama 2 7B: Ψ/33); "
                    "--largest-unit sets it");
    return m;
  }
  if (shape) {
    for (const char* f : {"n-embd", "n-layer", "n-head"})
      if (!flags.has(f)) throw ConfigError(cat("[estimate] a GPT shape needs --n-embd, --n-layer and --n-head; --", f, " is missing"));
    GptShape g{int_flag(flags, "vocab"), int_flag(flags, "seq-len"), int_flag(flags, "n-embd"),
               int_flag(flags, "n-layer"), int_flag(flags, "n-head")};
    check_gpt_limits(g, "the shape flags");
    return describe_gpt(g);
  }
  if (config.gpt) {
    check_gpt_limits(*config.gpt, cat(flags.get("config"), " (its model section)"));
    return describe_gpt(*config.gpt, "config");
  }
  if (config.llama) return describe_llama(*config.llama, "config");
  std::string known;
  for (const auto& n : named_model_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError(cat("[estimate] no model given: use --model NAME (", known,
                        "), or --params N --largest-unit N, or --n-embd --n-layer --n-head"));
}

// "10%" or "0.1": a share in [0, 0.9].
double headroom_flag(const std::string& text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string_view number = std::string_view(text).substr(0, text.size() - (percent ? 1 : 0));
  const bool signed_or_empty = number.empty() || number.front() == '-' || number.front() == '+';
  const std::optional<long double> v0 = signed_or_empty ? std::nullopt : parse_decimal(number);
  if (!v0) {
    throw ConfigError(cat("[estimate] --headroom must be a share of the device, such as 10% or 0.1, not ", quote_input(text)));
  }
  const double v = static_cast<double>(*v0) / (percent ? 100.0 : 1.0);
  if (!(v <= 0.9)) throw ConfigError(cat("[estimate] --headroom ", quote_input(text), " leaves less than 10% of the device to plan in: use 0% to 90%"));
  return v;
}

// A positive decimal (exponents allowed) for --NAME.
double positive_flag(const Flags& flags, const std::string& name) {
  const std::optional<long double> v = parse_decimal(flags.get(name));
  if (!v || !(*v > 0) || *v > 1e30L) throw ConfigError(cat("[estimate] --", name, " must be a positive number, not ", quote_input(flags.get(name))));
  return static_cast<double>(*v);
}

// The step-time flags. With --model-parallel M, `in` is planned as ranks / M data-parallel groups.
Machine machine_from(const Flags& flags, PlanInput& in) {
  Machine m;
  if (flags.has("peak-tflops") != flags.has("achieved-fraction")) {
    throw ConfigError("[estimate] a step time needs both --peak-tflops and --achieved-fraction (what forward and backward sustain "
                      "of the peak on one device, measured)");
  }
  const bool timed = flags.has("peak-tflops");
  for (const char* f : {"memory-bandwidth", "intra-node-bandwidth", "inter-node-bandwidth", "host-memory-bandwidth", "disk-read-bandwidth",
                        "disk-write-bandwidth", "model-parallel", "comm-on-compute-cores"}) {
    if (flags.has(f) && !timed) throw ConfigError(cat("[estimate] --", f, " is for the step time: add --peak-tflops and --achieved-fraction"));
  }
  if (!timed) return m;
  m.peak_flops = positive_flag(flags, "peak-tflops") * 1e12;
  m.achieved_fraction = positive_flag(flags, "achieved-fraction");
  if (m.achieved_fraction > 1) throw ConfigError("[estimate] --achieved-fraction is a share of the peak: at most 1");
  if (flags.has("memory-bandwidth")) m.memory_bandwidth = parse_bandwidth(flags.get("memory-bandwidth"), "--memory-bandwidth");
  if (flags.has("intra-node-bandwidth")) m.intra_node_bandwidth = parse_bandwidth(flags.get("intra-node-bandwidth"), "--intra-node-bandwidth");
  if (flags.has("inter-node-bandwidth")) m.inter_node_bandwidth = parse_bandwidth(flags.get("inter-node-bandwidth"), "--inter-node-bandwidth");
  if (flags.get("latency") != "0") m.latency = positive_flag(flags, "latency");
  if (flags.has("host-memory-bandwidth")) m.host_memory_bandwidth = parse_bandwidth(flags.get("host-memory-bandwidth"), "--host-memory-bandwidth");
  m.disk_read_bandwidth = parse_bandwidth(flags.get("disk-read-bandwidth"), "--disk-read-bandwidth");
  m.disk_write_bandwidth = parse_bandwidth(flags.get("disk-write-bandwidth"), "--disk-write-bandwidth");
  m.model_parallel = int_flag(flags, "model-parallel");
  m.comm_on_compute_cores = flags.has("comm-on-compute-cores");
  if (m.model_parallel > 1) {
    if (in.ranks % m.model_parallel != 0 || in.ranks_per_node % m.model_parallel != 0) {
      throw ConfigError(cat("[estimate] --model-parallel ", m.model_parallel, " must divide --ranks (", in.ranks, ") and the ranks per node (",
                            in.ranks_per_node, "): its groups lie inside a node"));
    }
    in.ranks /= m.model_parallel;
    in.ranks_per_node /= m.model_parallel;
  }
  return m;
}

struct Setup {
  PlanInput input;
  Machine machine;
  Capacity capacity;
  std::optional<int> only_stage;
  std::optional<std::string> configured;
};

Setup setup_from(const Flags& flags) {
  EstimateConfig config;
  if (flags.has("config")) config = read_estimate_config(flags.get("config"));
  Setup s;
  PlanInput& in = s.input;
  in.model = model_from(flags, config);
  // A LLaMA of a config is one zero trains: its activations are its own (as a GPT's always are);
  // the named LLaMA shapes are planned with a GPU trainer's fused attention (planner.h).
  if (config.llama && !flags.has("model")) in.llama_activation_bytes = llama_model_activation_hook();
  in.ranks = int_flag(flags, "ranks");
  in.ranks_per_node = flags.has("ranks-per-node") ? int_flag(flags, "ranks-per-node") : std::min(in.ranks, 8);
  in.micro_batch = flags.has("micro-batch") ? int_flag(flags, "micro-batch") : config.micro_batch.value_or(1);
  in.gradient_accumulation_steps = flags.has("gradient-accumulation-steps") ? int_flag(flags, "gradient-accumulation-steps")
                                                                            : config.gradient_accumulation_steps.value_or(1);
  in.checkpointing.enabled = flags.has("activation-checkpointing");
  in.checkpointing.cpu = flags.has("cpu-checkpointing");
  if (in.checkpointing.cpu && !in.checkpointing.enabled) {
    throw ConfigError("[estimate] --cpu-checkpointing moves the kept block inputs to the host: add --activation-checkpointing");
  }
  // The file's settings as zero train reads them ("auto" bucket sizes from the planned model's
  // hidden size, as the Hugging Face Trainer fills them in); the flags override.
  const std::int64_t hidden = in.model.gpt ? in.model.gpt->channels : in.model.llama ? in.model.llama->hidden : 0;
  in.settings = engine_settings(config, in.ranks, hidden);
  if (flags.has("dtype")) in.settings.precision.compute = parse_dtype(flags.get("dtype"));
  if (flags.has("delayed-update")) in.settings.offload.delayed_update = true;
  if (config.has_zero) {
    EngineSettings asked = in.settings;  // as its row will be planned (the delayed update needs optimizer offload alone)
    asked.offload.delayed_update = asked.offload.delayed_update && asked.offload.optimizer && !asked.offload.params;
    s.configured = plan_label(asked);
  }
  in.link_bandwidth = parse_bandwidth(flags.get("link-bandwidth"), "--link-bandwidth");
  const std::string comm = flags.get("comm");
  if (comm != "mpi" && comm != "threads" && comm != "self") {
    throw ConfigError(cat("[estimate] --comm must be mpi, threads or self, not '", comm, "'"));
  }
  in.comm_scratch = comm == "mpi";
  if (flags.has("device-memory")) s.capacity.device = parse_byte_size(flags.get("device-memory"), "--device-memory");
  s.capacity.headroom = headroom_flag(flags.get("headroom"));
  if (flags.has("host-memory")) s.capacity.host = parse_byte_size(flags.get("host-memory"), "--host-memory");
  if (flags.has("stage")) {
    const std::string st = flags.get("stage");
    if (st != "0" && st != "1" && st != "2" && st != "3") throw ConfigError(cat("[estimate] --stage must be 0, 1, 2 or 3, not '", st, "'"));
    s.only_stage = std::stoi(st);
  }
  s.machine = machine_from(flags, in);
  check_run_limits(in);
  return s;
}

}  // namespace

int estimate_main(const std::vector<std::string>& args) {
  Flags flags("zero estimate", estimate_flags(), args);
  if (flags.help()) {
    std::printf("%s%s", kIntro, flags.usage().c_str());
    return 0;
  }
  const Setup s = setup_from(flags);
  const NamedPath json{"--json", flags.get("json")};
  const std::vector<NamedPath> inputs = flags.has("config") ? std::vector<NamedPath>{{"--config", flags.get("config")}} : std::vector<NamedPath>{};
  if (flags.has("json")) check_output_path(json, inputs);  // before the plan, as every command checks its outputs first
  EstimateReport report = make_report(s.input, s.capacity, s.only_stage);
  report.configured = s.configured;
  add_step_times(report, s.machine);
  std::printf("%s", format_report(report).c_str());
  if (flags.has("json")) write_output_file(json, report_json(report).dump(2) + "\n", inputs);
  return 0;
}

}  // namespace zero::cli
