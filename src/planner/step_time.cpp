#include "planner/step_time.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "common/error.h"

namespace zero {
namespace {

constexpr double kAdamBytesPerElement = 28;  // read gradient, master, m, v; write master, m, v

struct Shape {
  double vocab = 0, seq = 0, channels = 0, layers = 0, parameters = 0, blocks = 0;
};

Shape shape_of(const ModelDescription& m) {
  Shape s;
  s.parameters = static_cast<double>(m.num_parameters());
  if (m.gpt) {
    const GptShape& g = *m.gpt;
    s = {double(g.vocab_size), double(g.seq_len), double(g.channels), double(g.layers), s.parameters, 0};
    s.blocks = s.layers * (12 * s.channels * s.channels + 13 * s.channels);
  } else if (m.llama) {
    const LlamaShape& l = *m.llama;
    s = {double(l.vocab_size), double(l.seq_len), double(l.hidden), double(l.layers), s.parameters, 0};
    s.blocks = s.parameters - s.vocab * s.channels * (l.tie_word_embeddings ? 1 : 2) - s.channels;
  }
  return s;
}

// One class of collectives (the reductions, or the gathers) as the links carry it, per step.
struct LinkBytes {
  double device = 0;  // bytes a rank sends through its device's intra-node link
  double node = 0;    // bytes its node sends over the network (with more than one node)
  double steps = 0;   // latency steps: calls x message steps per call
};

// Seconds for one class over the machine's links: every device sends its 1/M through its
// intra-node link; a node sends `node` bytes over its network (see step_time.h).
double collective_seconds(const LinkBytes& b, const Plan& plan, const Machine& m) {
  if (b.device <= 0 && b.node <= 0) return 0;
  double s = 0;
  if (plan.ranks_per_node * m.model_parallel > 1) s = b.device / m.model_parallel / m.intra_node_bandwidth;
  if (plan.nodes > 1) s = std::max(s, b.node / m.inter_node_bandwidth);
  return s + b.steps * m.latency;
}

// A ring or tree collective over N ranks: 2 ceil(log2 N) message steps, and a node sends what one
// rank sends (its rings cross the node's boundary with one rank's bytes).
double ring_steps(const Plan& plan) { return 2 * std::ceil(std::log2(static_cast<double>(plan.ranks))); }

// Whether ZeRO++'s options change how the links see a class (stage 3 on more than one node).
bool qgz_runs(const Plan& plan) { return plan.settings.stage == 3 && plan.settings.zero_quantized_gradients && plan.nodes > 1; }
bool hpz_runs(const Plan& plan) {
  return plan.settings.stage == 3 && plan.settings.hpz_partition_size > 1 && plan.nodes > 1 && plan.settings.mics_shard_size <= 0;
}

LinkBytes reductions(const Plan& plan) {
  const auto at = [](Collective c) { return static_cast<int>(c); };
  const StepTraffic& t = plan.traffic;
  const double all_reduce = double(t.sent[at(Collective::kAllReduce)]), scatter = double(t.sent[at(Collective::kReduceScatter)]);
  const double calls_ar = double(t.calls[at(Collective::kAllReduce)]), calls_rs = double(t.calls[at(Collective::kReduceScatter)]);
  if (!qgz_runs(plan)) return {all_reduce + scatter, all_reduce + scatter, (calls_ar + calls_rs) * ring_steps(plan)};
  // qgZ: a hierarchical all-to-all of pair exchanges (engine/quantized_reduce_scatter.h). Its
  // intra-node bytes stay on the devices' links; every rank of a node sends its across share
  // through the node's network at once (an all-to-all, not a ring); a pair exchange is 2 steps.
  const double across = double(t.sent_across[at(Collective::kReduceScatter)]);
  return {all_reduce + scatter - across, all_reduce + plan.ranks_per_node * across, calls_ar * ring_steps(plan) + calls_rs * 2};
}

// The gathers' seconds, split as they overlap: stage 3's before forward and before backward (half
// each; with hpZ the spanning ones and the node's own, as many calls each), the others' all under
// the next forward.
std::pair<double, double> gather_seconds(const Plan& plan, const Machine& m) {
  const auto at = [](Collective c) { return static_cast<int>(c); };
  const StepTraffic& t = plan.traffic;
  const double sent = double(t.sent[at(Collective::kAllGather)] + t.sent[at(Collective::kBroadcast)]);
  const double steps = double(t.calls[at(Collective::kAllGather)] + t.calls[at(Collective::kBroadcast)]) * ring_steps(plan);
  const double whole = collective_seconds({sent, sent, steps}, plan, m);
  if (plan.settings.stage != 3) return {whole, 0};
  if (!hpz_runs(plan)) return {whole / 2, whole / 2};
  // hpZ: the backward gathers read the secondary partition inside the node and never cross. The
  // forward ones span all N ranks, and zero hands each peer its piece, so (N-L)/(N-1) of their
  // bytes go to other nodes: from the across bytes, their whole, which a ring sends out of the
  // node; the rest stayed inside it.
  const double N = plan.ranks, L = plan.ranks_per_node;
  const double spanning = double(t.sent_across[at(Collective::kAllGather)] + t.sent_across[at(Collective::kBroadcast)]) * (N - 1) / (N - L);
  return {collective_seconds({spanning, spanning, steps / 2}, plan, m), collective_seconds({sent - spanning, 0, steps / 2}, plan, m)};
}

}  // namespace

std::string step_time_missing(const PlanInput& in, const Plan& plan, const Machine& m) {
  if (!m.predicts()) return "the device's peak FLOP/s and the fraction of it forward and backward sustain";
  if (!in.model.gpt && !in.model.llama) return "the model's shape (its FLOPs per token), not only its parameter count";
  if (plan.ranks_per_node * m.model_parallel > 1 && !(m.intra_node_bandwidth > 0)) return "the intra-node bandwidth";
  if (plan.nodes > 1 && !(m.inter_node_bandwidth > 0)) return "the inter-node bandwidth";
  if (plan.settings.offload.optimizer && !(m.host_memory_bandwidth > 0)) return "the host's memory bandwidth (CPU Adam)";
  if (plan.nvme_read_bytes + plan.nvme_written_bytes > 0 && !(m.disk_read_bandwidth > 0 && m.disk_write_bandwidth > 0))
    return "the disk's read and write bandwidths (the NVMe tier)";
  return "";
}

namespace {

// Megatron's all-reduces of one micro-batch's activations, all blocks, forward and backward.
double tensor_parallel_seconds(const PlanInput& in, const Shape& s, const Machine& m, double element_bytes) {
  const int M = m.model_parallel;
  if (M == 1) return 0;
  const double bytes = in.micro_batch * s.seq * s.channels * element_bytes;
  const double one = 2.0 * (M - 1) / M * bytes / m.intra_node_bandwidth + 2.0 * (M - 1) * m.latency;
  return one * (in.checkpointing.enabled ? 6 : 4) * s.layers * in.gradient_accumulation_steps;
}

// Offload's host-side parts of a step, each as if alone (see step_time.h).
struct OffloadSeconds {
  double adam = 0;      // CPU Adam over the shard at the node's memory bandwidth
  double down = 0;      // the reduced gradients to the host
  double up = 0;        // the updated parameters back to the device (none with offload_param)
  double gathered = 0;  // offload_param: the gathers' copies beyond the forward and backward they overlap
};

OffloadSeconds offload_seconds(const PlanInput& in, const Plan& plan, const Machine& m, double busy) {
  const OffloadOptions& o = plan.settings.offload;
  const double M = m.model_parallel;
  OffloadSeconds s;
  s.adam = plan.shard_numel / M * kAdamBytesPerElement / (m.host_memory_bandwidth / (plan.ranks_per_node * M));
  s.down = plan.device_to_host_bytes / M / in.link_bandwidth;
  // With offload_param the link brings every unit's slices up as they are gathered, under
  // forward and backward, and Adam updates the host shard in place: nothing goes up after it.
  s.up = o.params ? 0 : plan.host_to_device_bytes / M / in.link_bandwidth;
  s.gathered = o.params ? std::max(0.0, plan.host_to_device_bytes / M / in.link_bandwidth - busy) : 0;
  return s;
}

// Adam waits for the whole step's gradients: with clipping (it needs their norm), on the NVMe
// tier (it streams the state through its buffers at the step) and with the parameters on the
// NVMe tier (their parts share one window, written to disk after each part's Adam).
bool adam_waits_for_step(const Plan& plan) {
  const OffloadOptions& o = plan.settings.offload;
  return plan.settings.gradient_clipping > 0 || o.optimizer_nvme || o.params_nvme;
}

// The optimizer's exposed seconds, given the backward window its gradients arrive in (the disk's
// part of the NVMe tier's step is disk_seconds's).
double optimizer_seconds(const PlanInput& in, const Plan& plan, const Machine& m, double backward_window, double busy) {
  const OffloadOptions& o = plan.settings.offload;
  if (!o.optimizer) {
    const double elements = (plan.settings.stage == 0 ? plan.padded_numel : plan.shard_numel) / double(m.model_parallel);
    return m.memory_bandwidth > 0 ? elements * kAdamBytesPerElement / m.memory_bandwidth : 0;
  }
  const OffloadSeconds h = offload_seconds(in, plan, m, busy);
  const double units = std::max(1, plan.units);
  if (o.delayed_update) return h.gathered + std::max(0.0, h.down - backward_window) + std::max(0.0, h.adam + h.up - busy);
  if (adam_waits_for_step(plan)) return h.gathered + std::max(0.0, h.down - backward_window) + h.adam + h.up;
  return h.gathered + std::max(0.0, h.down + h.adam + h.up - backward_window) + (h.adam + h.up) / units;
}

// The NVMe tier's disk (see step_time.h): its seconds for the step's bytes and what it adds to the
// step beyond the compute, the collectives and the optimizer's CPU time.
std::pair<double, double> disk_seconds(const PlanInput& in, const Plan& plan, const Machine& m, double busy) {
  const OffloadOptions& o = plan.settings.offload;
  // A node's disk serves its devices one after the other: each moves 1/M of its rank's bytes.
  const double node = plan.ranks_per_node;
  const double param_read = plan.nvme_param_read_bytes * node / m.disk_read_bandwidth;
  const double step_read = (plan.nvme_read_bytes - plan.nvme_param_read_bytes) * node / m.disk_read_bandwidth;
  const double step_written = plan.nvme_written_bytes * node / m.disk_write_bandwidth;
  const double whole = param_read + step_read + step_written;
  if (whole <= 0) return {0, 0};
  const OffloadSeconds h = offload_seconds(in, plan, m, busy);
  // Forward and backward: the parameters' reads run ahead of their gathers while the units before
  // them compute (with one buffer, which is the window, nothing reads ahead); the first unit's
  // read has nothing before it. What the link's copies expose already is not counted twice.
  const double largest_share = plan.padded_numel > 0 ? static_cast<double>(plan.largest_unit) / plan.padded_numel : 0;
  const double reads = o.param_nvme.buffer_count <= 1 ? param_read : std::max(param_read * largest_share, param_read - busy);
  const double under_compute = std::max(0.0, reads - h.gathered);
  // The step: the optimizer's state streams through its buffers, sub-group by sub-group, the
  // disk reading ahead and writing behind while the CPU updates one (a pipeline of S stages:
  // max(disk, CPU) plus one stage of the other); the host optimizer with the parameters on disk
  // writes each part after its Adam and waits for it.
  const double disk = step_read + step_written, cpu = h.adam + h.up;
  const double stages = std::max<double>(1, static_cast<double>(plan.nvme_sub_groups));
  const double at_step = o.optimizer_nvme ? std::max(disk, cpu) + std::min(disk, cpu) / stages - cpu : disk;
  return {whole, under_compute + at_step};
}

// ZeRO++'s quantisation passes on the device, seconds per step (see step_time.h): each pass
// reads its input and writes its output once at the device's memory bandwidth. q = 0.5625 bytes
// an element: 4 bits and a 4-byte scale a block of 64 (engine/gradient_quantize.h); int8 weights
// are 1 byte (their scale a block of 2048 left out).
double quantize_seconds(const PlanInput& in, const Plan& plan, const Machine& m) {
  const EngineSettings& z = plan.settings;
  if (z.stage != 3 || !(m.memory_bandwidth > 0)) return 0;
  const double e = z.precision.mixed() ? 2 : 4, q = 0.5625, P = double(plan.padded_numel) / m.model_parallel;
  const double N = plan.ranks, L = plan.ranks_per_node;
  double bytes = 0;
  // qwZ: each quantised gather quantises this rank's slice and dequantises the whole unit; every
  // gather is quantised but hpZ's backward ones, which read the secondary partition.
  if (z.quantized_weights) bytes += (z.hpz_partition_size > 1 ? 1 : 2) * P * (1 + e) * (1 + 1 / N);
  // qgZ: quantise the unit's gradient, dequantise and sum it in f32 inside the node, quantise the
  // node sums (1/L of it), dequantise and sum them across the nodes.
  if (qgz_runs(plan)) bytes += P * ((e + q) + (q + 4) + 2 * (4 + q) / L);
  return bytes * in.gradient_accumulation_steps / m.memory_bandwidth;
}

}  // namespace

double flops_per_token(const ModelDescription& model, bool checkpointing) {
  const Shape s = shape_of(model);
  if (s.seq == 0) return 0;
  const double attention = s.layers * s.channels * s.seq;
  return 6 * s.parameters + 12 * attention + (checkpointing ? 2 * s.blocks + 4 * attention : 0);
}

StepTime predict_step_time(const PlanInput& in, const Plan& plan, const Machine& m) {
  if (m.model_parallel < 1) throw ConfigError("[estimate] model parallelism must be 1 or more devices");
  if (const std::string missing = step_time_missing(in, plan, m); !missing.empty()) {
    throw ConfigError(cat("[estimate] the step time of ", plan.label, " needs ", missing));
  }
  const Shape s = shape_of(in.model);
  const bool ckpt = in.checkpointing.enabled;
  const int G = in.gradient_accumulation_steps, stage = plan.settings.stage;
  const double devices = static_cast<double>(plan.ranks) * m.model_parallel;
  StepTime t;
  t.flops_per_token = flops_per_token(in.model, ckpt);
  t.tokens_per_step = static_cast<double>(plan.ranks) * in.micro_batch * s.seq * G;
  t.compute = t.flops_per_token * t.tokens_per_step / devices / (m.peak_flops * m.achieved_fraction);
  t.tensor_parallel = tensor_parallel_seconds(in, s, m, plan.settings.precision.mixed() ? 2 : 4);
  // One micro-batch's forward and backward, the windows collectives hide behind.
  const double busy = t.compute + t.tensor_parallel, forward_share = ckpt ? 0.25 : 1.0 / 3;
  const double forward = busy * forward_share / G, backward = busy * (1 - forward_share) / G;

  const double reduce = collective_seconds(reductions(plan), plan, m);
  const auto [before_forward, before_backward] = gather_seconds(plan, m);
  t.comm = reduce + before_forward + before_backward;
  // Stages 0 and 1 reduce at the last micro-batch only; stage 3 gathers before backward too.
  const double reduce_window = stage <= 1 ? backward : G * backward;
  const double under_backward = reduce + before_backward, under_forward = before_forward;
  const double forward_window = stage == 3 ? G * forward : forward;
  // The last unit's reduction has no backward left to hide behind, nor the first unit's gather
  // any forward before it: a window exposes its excess or that unit, whichever is longer.
  const double largest_share = plan.padded_numel > 0 ? static_cast<double>(plan.largest_unit) / plan.padded_numel : 0;
  t.comm_exposed = m.comm_on_compute_cores
                       ? t.comm
                       : std::max(reduce * largest_share, under_backward - reduce_window) +
                             std::max(under_forward * largest_share / (stage == 3 ? G : 1), under_forward - forward_window);
  t.optimizer = optimizer_seconds(in, plan, m, reduce_window, busy);
  std::tie(t.disk, t.disk_exposed) = disk_seconds(in, plan, m, busy);
  t.quantize = quantize_seconds(in, plan, m);
  t.step = busy + t.comm_exposed + t.optimizer + t.disk_exposed + t.quantize;
  t.tokens_per_second = t.tokens_per_step / t.step;
  t.tflops_per_device = t.flops_per_token * t.tokens_per_second / devices / 1e12;
  return t;
}

std::string describe_machine(const Machine& m, bool with_disk) {
  const auto gbs = [](double b, const char* per) { return b > 0 ? cat(b / 1e9, " GB/s", per) : std::string("not given"); };
  std::string s = cat("peak ", m.peak_flops / 1e12, " TFLOP/s x ", m.achieved_fraction, " sustained by forward+backward; device memory ",
                      gbs(m.memory_bandwidth, ""), "; intra-node ", gbs(m.intra_node_bandwidth, " per device"), ", inter-node ",
                      gbs(m.inter_node_bandwidth, " per node"), "; latency ", m.latency * 1e6, " us per step");
  if (m.host_memory_bandwidth > 0) s += cat("; host memory ", gbs(m.host_memory_bandwidth, " per node"));
  if (with_disk) s += cat("; NVMe ", gbs(m.disk_read_bandwidth, " read, "), gbs(m.disk_write_bandwidth, " written per node"));
  if (m.model_parallel > 1) s += cat("; ", m.model_parallel, "-way tensor parallelism inside a node");
  if (m.comm_on_compute_cores) s += "; collectives on the compute cores (no overlap)";
  return s;
}

}  // namespace zero
