// The step-time model of `zero estimate`: how long one optimizer step of a planned configuration
// takes on a described machine, and so its tokens/s and its TFLOP/s per device.
//
//   Machine m;  m.peak_flops = 125e12;  m.achieved_fraction = 0.312;  m.inter_node_bandwidth = 100e9; ...
//   StepTime t = predict_step_time(input, plan, m);   // t.step seconds, t.tflops_per_device
//
// What it adds up, per device (one rank), for one optimizer step of G micro-batches:
//   compute    FLOPs / (peak x achieved fraction). FLOPs per token as the papers count them
//              (Megatron-LM's formula): 6Ψ + 12·L·C·T, and with activation checkpointing the
//              recomputed forward of the blocks too, 2Ψ_blocks + 4·L·C·T. The achieved fraction is
//              the device's, measured on forward and backward alone (one device, nothing to wait
//              for), not a constant of this model. Forward is 1/3 of it (1/4 with checkpointing:
//              the recomputation runs in backward).
//   tensor     with model_parallel M > 1 (Megatron's tensor parallelism inside a node, which zero
//   parallel   does not run; for checking against published runs): 4 all-reduces of the micro-
//              batch's activations (b·T·C) per block (6 with checkpointing), ring over the
//              intra-node link, not overlapped (they sit between the layer's products).
//   comm       the data-parallel collectives, from the plan's traffic counters (the engine's own
//              bytes and calls): a ring moves them through every device's intra-node link and,
//              across nodes, through each node's network (a node sends what one data-parallel
//              rank sends, all its rings together): time = max(bytes / intra, node bytes /
//              inter) + calls x 2·ceil(log2 N) x latency.
//   ZeRO++     (stage 3, docs/zeropp.md) qwZ's int8 gathers are in the plan's bytes. hpZ: the
//              backward gathers stay in the node (their bytes over the intra-node link, under
//              backward); the forward ones span all ranks (zero sends each peer its piece, so they
//              are the across bytes x (N-1)/(N-L), which a node sends whole, under forward).
//              qgZ: the reduce-scatter is an all-to-all, inside the node on the devices' links, then across: a node sends all its L ranks' across bytes at once,
//              2 latency steps a pair exchange. On one node both are as plain stage 3.
//   quantize   ZeRO++'s quantisation passes on the device, not overlapped (they run between the
//              products; the paper gives no kernel times, so this is this model's assumption):
//              each reads its input and writes its output once at the device's memory bandwidth.
//              qwZ: per quantised gather (both per micro-batch, the forward's alone with hpZ) the
//              rank's slice quantised and the unit dequantised, (1 + e)(1 + 1/N) bytes an element
//              (e: the training type's bytes); qgZ: (e + q) + (q + 4) + 2(4 + q)/L bytes an
//              element per micro-batch (q = 0.5625: int4 and a scale a 64-block; f32 sums).
//   overlap    as the engine schedules it (src/engine/stage*.cpp, schedule.cpp): a unit's
//              reduction starts when backward has produced it and overlaps the backward of the
//              units before it (stages 0 and 1: only at the last micro-batch; 2 and 3: every
//              one); stages 1 and 2 all-gather the updated parameters under the next step's
//              first forward; stage 3 gathers each unit before its forward and its backward, half
//              of its gathers under forward, half under backward (hpZ: see ZeRO++). A window's comm beyond its
//              compute is exposed, or if longer the last unit's reduction (no backward left to hide it)
//              and the first unit's gather (no forward before it). On a device whose cores also
//              run the collectives (Machine::comm_on_compute_cores: a CPU rank) nothing overlaps.
//   optimizer  on the device: 28 bytes per updated element (read gradient, master, m, v; write
//              master, m, v; in mixed precision the 16-bit gradient and parameter replace 4 of
//              them) at the device's memory bandwidth. Offloaded: CPU Adam over the shard, the
//              same 28 bytes per element at the node's memory bandwidth shared by its devices
//              (zero's CPU Adam runs at memory speed: optim/cpu_adam.h), after the gradients'
//              copy to the host under backward, then the updated parameters back (with
//              offload_param Adam updates the host shard in place and the link's gathers run
//              under compute). Without clipping Adam runs per unit as the gradients land, under
//              backward; with the delayed update, under the next step. On the NVMe tier (and with
//              the parameters on it) Adam waits for the step.
//   disk       the NVMe tier (the plan's swap-file bytes, engine-counted): a node's disk serves its
//              ranks' bytes one after another, reads at the read bandwidth and writes at the write
//              bandwidth, never both at once (one device: fio's mixed reads and writes on this
//              machine took the sum of their times, bench/README.md). As the engine schedules it:
//              the parameters' reads (offload_param "nvme") run ahead of their gathers under
//              forward and backward (param_home.h), exposing what outlasts that window, or at
//              least the first unit's read (with buffer_count 1 nothing reads ahead: all of it);
//              at the step the optimizer streams its state through buffer_count buffers
//              (optimizer_nvme.cpp), reading the next sub-groups and writing the last while the
//              CPU updates one: a pipeline of S sub-groups takes max(disk, CPU) + min(disk, CPU)/S,
//              the CPU being Adam and the copy to the device; host Adam with the parameters on
//              disk waits for each part's write. The disk's exposed time is what it adds to the
//              step beyond the rest.
// One set of constants for every machine: the 28 bytes, the 1/3 forward share, 2·ceil(log2 N)
// latency steps, the overlap rules above. Nothing is fitted per machine or per run.
#pragma once

#include <string>

#include "planner/planner.h"

namespace zero {

// One node's NVMe bandwidth assumed by default, bytes per second: one PCIe 4.0 x4 drive's rated
// sequential rates (Samsung 980 PRO: 7,000 MB/s read, 5,000 MB/s write). Through a file system a
// drive sustains less (this machine: zero bench io, bench/README.md): give measured figures.
inline constexpr double kNvmeReadBandwidth = 7e9;
inline constexpr double kNvmeWriteBandwidth = 5e9;

// One device and the links around it. A figure of 0 is unknown: peak_flops and
// achieved_fraction are needed for a prediction; the others, when 0, leave their part out (the
// output says which).
struct Machine {
  double peak_flops = 0;            // dense FLOP/s of one device for the run's matrix-product dtype
  double achieved_fraction = 0;     // of peak_flops, sustained by forward + backward on one device alone
  double memory_bandwidth = 0;      // bytes/s of one device's memory (the on-device optimizer)
  double intra_node_bandwidth = 0;  // bytes/s one device sends to its node's others (NVLink; one direction)
  double inter_node_bandwidth = 0;  // bytes/s one node sends to the other nodes (all its NICs; one direction)
  double latency = 0;               // seconds per message step of a collective
  double host_memory_bandwidth = 0; // bytes/s of one node's host memory (CPU Adam with offload)
  double disk_read_bandwidth = kNvmeReadBandwidth;    // bytes/s one node reads from its NVMe (its ranks share it)
  double disk_write_bandwidth = kNvmeWriteBandwidth;  // bytes/s one node writes to its NVMe
  int model_parallel = 1;           // M-way tensor parallelism inside a node (see the top)
  // The collectives run on the compute cores (a CPU rank bound to one core: its communication
  // thread copies and sums on the core its kernels use), so they do not overlap compute.
  bool comm_on_compute_cores = false;
  bool predicts() const { return peak_flops > 0 && achieved_fraction > 0; }
};

struct StepTime {
  double compute = 0;          // s: forward + backward (+ recomputation) of the step's micro-batches
  double tensor_parallel = 0;  // s: model-parallel all-reduces
  double comm = 0;             // s: the data-parallel collectives, as if alone
  double comm_exposed = 0;     // s: the part of comm not hidden behind compute
  double optimizer = 0;        // s: exposed optimizer time (device Adam, or host Adam and the host link)
  double disk = 0;             // s: the NVMe tier's bytes at the node's disk bandwidths, as if alone
  double disk_exposed = 0;     // s: what the disk adds to the step (the rest overlaps compute or CPU Adam)
  double quantize = 0;         // s: ZeRO++'s quantisation passes on the device (qwZ, qgZ)
  double step = 0;             // s: compute + tensor_parallel + comm_exposed + optimizer + disk_exposed + quantize
  double tokens_per_step = 0;  // all devices
  double flops_per_token = 0;  // counted as above
  double tokens_per_second = 0;
  double tflops_per_device = 0;  // FLOPs per token x tokens/s / devices, in 10^12
};

// FLOPs per token of `model` (a GPT or LLaMA shape; 0 for a model known only by counts), with or
// without the recomputed forward of activation checkpointing.
double flops_per_token(const ModelDescription& model, bool checkpointing);

// What the step time of `plan` needs and `machine` lacks, in words ("the inter-node bandwidth"):
// the peak and the achieved fraction, the model's shape, the intra-node bandwidth with more than
// one device in a node, the inter-node one with more than one node, the host's with offload, the
// disk's with bytes on the NVMe tier. ""
// when nothing is missing.
std::string step_time_missing(const PlanInput& in, const Plan& plan, const Machine& machine);

// The step of `plan` (planned from `in`; with machine.model_parallel M, `in.ranks` counts
// data-parallel groups of M devices). ConfigError ("[estimate] ...") when something is missing.
StepTime predict_step_time(const PlanInput& in, const Plan& plan, const Machine& machine);

// The machine's figures and the constants, in words, for the notes under the step-time table;
// the disk's with `with_disk` (a plan uses the NVMe tier).
std::string describe_machine(const Machine& machine, bool with_disk = false);

}  // namespace zero
