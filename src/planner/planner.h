// The planner: what a ZeRO configuration will hold in memory, per rank and per tier, and what it
// will move per step, predicted before anything is allocated.
//
//   PlanInput in;  in.model = named_model("gpt2-xl");  in.ranks = 8;  in.settings.stage = 2;
//   Plan p = plan(in);          // p.device.total(): predicted peak device bytes per rank
//
// It predicts what the engine allocates, not a textbook formula, because it runs the engine: two
// optimizer steps of the engine's own schedule (src/engine), for a model known only by its units,
// on the counting device (allocations accounted in a ledger, holding no memory; nothing computed)
// over the counting communicator (collectives counted, never run) -- planner/dry_run.cpp. The
// ledger's peak, by category at that moment, is the prediction; the traffic and link counters of
// the second step are the step's. A 70B model plans in milliseconds: nothing is allocated.
// Communication scratch, which a running backend allocates while a collective runs, is reserved
// by the engine's collectives in the dry run from a collective's issue until it is first waited
// for (the largest outstanding one: the comm thread runs one at a time), so the prediction is
// never below what a run holds; it equals it where the collectives hold no scratch, and exceeds
// it under MPI by at most one reduction's scratch where a reduction overlaps compute (stage 3).
// Activations come from a hook (the GPT model's own count; LLaMA shapes: activation_counts.h),
// allocated before the engine, as the model allocates them: a constant, by tier (cpu
// checkpointing keeps the block inputs in the host tier).
//
// What the dry run finds, as the engine allocates it (the tests hold the figures to the ledger):
// fp32: 4 bytes for everything. Mixed precision (bf16 or fp16: the same bytes): 16-bit
// parameters and gradients (and the collectives on them), an fp32 master, m and v per shard
// element in the optimizer state (the ZeRO paper's K = 12), and fp32 scratch for the unit being
// computed (counted as activations). With offload_optimizer the host holds the master, m, v, the
// gradient shard in the training type and, in mixed precision, the 16-bit copy bound for the
// device: 16 bytes per shard element in both modes; the delayed update adds a second gradient
// shard. With offload_param the host shard is the master itself. The link carries each reduced
// slice down and the updated shard (or, with offload_param, every gathered slice) up, in the
// training type.
// The settings are the engine's own (engine/settings.h), as zero train builds the engine from
// them: every one of them reaches the dry run (a test varies each and holds the plan to the
// ledger), and they are checked by the engine's one validation (check_settings).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "comm/communicator.h"
#include "engine/settings.h"
#include "memory/ledger.h"
#include "model/gpt_activations.h"
#include "planner/model_shapes.h"

namespace zero {

// The --dtype of zero estimate: "fp32", or "mixed" (also "bf16"; "fp16", with DeepSpeed's dynamic
// loss scaling) for 16-bit parameters and gradients with fp32 masters and Adam state.
Dtype parse_dtype(const std::string& text);  // ConfigError for anything else
const char* dtype_name(Dtype compute);       // "fp32", "mixed"

// Host<->device link bandwidth assumed by default, bytes per second: a PCIe 4.0 x16 link carries
// 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s per direction in theory; pinned-memory copies measure
// about 25 GB/s (CUDA's bandwidthTest on A100-class machines), which is what offload sees.
inline constexpr double kPcie4x16Bandwidth = 25e9;

// Activation bytes per rank of a GPT shape at a micro-batch size, by tier, with or without
// activation checkpointing. The default is the GPT model's own count (Gpt::activation_bytes,
// what its constructor allocates through the ledger) on a device whose attention kernels keep the
// scores' scratch or not (BackendFacts::attention_scores: a GPU's do, the planner's default; the
// cpu's do not). Empty: GPT shapes' activations are not modelled (the output says so). Bare counts
// have no activations.
using ActivationBytesFn = std::function<ActivationBytes(const GptShape&, int micro_batch, const GptCheckpointing&)>;
ActivationBytesFn gpt_activation_hook(bool attention_scores = true);
// The same for LLaMA shapes. Empty (the default, `zero estimate`'s): the planner's count of a GPU
// trainer's LLaMA with fused attention (planner/activation_counts.h), for planning the named
// shapes on GPUs. llama_model_activation_hook(): zero's own LLaMA's count (Llama::activation_bytes,
// what its constructor allocates through the ledger), for a run zero itself trains.
using LlamaActivationBytesFn = std::function<ActivationBytes(const LlamaShape&, int micro_batch, const GptCheckpointing&)>;
LlamaActivationBytesFn llama_model_activation_hook(bool attention_scores = true);

struct PlanInput {
  ModelDescription model;
  int ranks = 1;                 // N, data-parallel ranks
  int ranks_per_node = 1;        // for the host total per node
  int micro_batch = 1;           // sequences per rank per micro-batch (activations only)
  GptCheckpointing checkpointing;  // activation checkpointing (activations only)
  int gradient_accumulation_steps = 1;
  // What the engine runs (engine/settings.h), read from a config as zero train reads it. The dry
  // run takes them as they are, but for the delayed update's warm-up: planned from the first step
  // (the steady state). Lamb holds the same bytes as Adam and does one more small all-gather.
  EngineSettings settings;
  // The MPI backend's reduce_scatter scratch (a whole unit per call). The threads and self
  // backends have none; set false to plan for them.
  bool comm_scratch = true;
  double link_bandwidth = kPcie4x16Bandwidth;  // bytes/s, host<->device
  ActivationBytesFn activation_bytes = gpt_activation_hook();
  LlamaActivationBytesFn llama_activation_bytes;
};

// Bytes of one tier by the ledger's categories.
struct TierBytes {
  std::array<std::uint64_t, kNumCategories> bytes{};
  std::uint64_t& operator[](Category c) { return bytes[static_cast<int>(c)]; }
  std::uint64_t operator[](Category c) const { return bytes[static_cast<int>(c)]; }
  std::uint64_t total() const;
  // parameters + gradients + optimizer state
  std::uint64_t model_states() const;
};

// Bytes a rank hands the transport per optimizer step, by collective, counted as the
// communicator counts them (the bandwidth-optimal algorithms' payload), and the number of calls.
struct StepTraffic {
  std::array<std::uint64_t, kNumCollectives> sent{};
  std::array<std::uint64_t, kNumCollectives> sent_across{};  // of sent, to peers on another node (ranks_per_node)
  std::array<std::uint64_t, kNumCollectives> calls{};
  std::uint64_t total() const;
  std::uint64_t total_across() const;
};

struct Plan {
  // What was planned.
  EngineSettings settings;
  int ranks = 1;
  int ranks_per_node = 1;  // as given, at most ranks
  int nodes = 1;
  std::string label;       // "2", "2+opt", "2+opt+dpu", "3+opt+param"

  // The layout, as the engine will have it.
  std::uint64_t numel = 0;          // Ψ
  std::uint64_t padded_numel = 0;   // all units padded to multiples of N
  std::uint64_t shard_numel = 0;    // padded / N
  std::uint64_t largest_unit = 0;   // padded elements of the largest unit
  int units = 0;

  // Memory per rank. device: by category at the moment of the device peak (the categories sum
  // to the peak). host: constant over the step.
  TierBytes device;
  TierBytes host;
  TierBytes nvme;  // offload_optimizer.device "nvme": the swap file's bytes per rank (masters, moments)
  // Model states held for the whole step (parameters, gradients, optimizer state), without the
  // transient unit gradients and gathered units: the figure of the ZeRO paper's Table 1.
  TierBytes persistent_device;
  std::uint64_t host_per_node = 0;  // host total x ranks on the fullest node
  bool activations_modelled = false;

  // Per rank per optimizer step.
  StepTraffic traffic;
  std::uint64_t host_to_device_bytes = 0;
  std::uint64_t device_to_host_bytes = 0;
  std::uint64_t nvme_read_bytes = 0, nvme_written_bytes = 0;  // the swap files, read and written once a step
  // Of nvme_read_bytes, the parameter swap file's (offload_param "nvme"), read under forward and
  // backward; the rest is read, and all of nvme_written_bytes written, at the optimizer step.
  std::uint64_t nvme_param_read_bytes = 0;
  // offload_optimizer "nvme": the sub-groups the optimizer streams through its buffers a step
  // (each part cut into sub_group_size pieces, as engine/optimizer_nvme.cpp cuts them); 0 otherwise.
  std::uint64_t nvme_sub_groups = 0;
  double link_seconds = 0.0;  // both directions, one after the other, at PlanInput::link_bandwidth
};

// Plans one configuration. ConfigError ("[planner] ...") for bad input: ranks, micro-batch or
// accumulation below 1, more ranks than parameters or than the smallest unit has (the engine
// refuses those too), settings the engine's validation refuses (check_settings), a link
// bandwidth that is not positive.
Plan plan(const PlanInput& input);

// "0", "1", "2+opt", "2+opt+dpu", "3+opt+param".
std::string plan_label(const EngineSettings& settings);

}  // namespace zero
