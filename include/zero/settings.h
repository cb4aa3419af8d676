// The engine's settings: everything a ZeRO configuration decides about a run (stage, placement,
// buckets, stage 3's schedule, precision, clipping, scaling, optimizer), in one struct, with
// DeepSpeed's defaults where DeepSpeed has the setting. It is the one description of a run:
// config/ reads a ds_config.json into it, `zero train` builds the engine from it, and the
// planner's dry run (`zero estimate`, the trainer's start-up check) runs the engine on it, so a
// prediction is made from exactly the settings the trainer runs with.
//
//   EngineSettings s;  s.stage = 3;  s.offload.optimizer = true;
//   check_settings(s, "engine");   // ConfigError naming the DeepSpeed key of each problem
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "zero/dtype.h"
#include "zero/adamw.h"
#include "zero/lamb.h"
#include "zero/loss_scaler.h"

namespace zero {

// The NVMe tier (ZeRO-Infinity; offload_optimizer.device "nvme"): the fp32 masters and Adam's
// moments in a swap file per rank, the step streaming them through host buffers sub-group by
// sub-group. DeepSpeed's keys and defaults.
struct NvmeOptions {
  std::string path;                             // offload_optimizer.nvme_path: a folder; each rank swaps in a folder of its own in it
  int buffer_count = 4;                         // offload_optimizer.buffer_count: sub-groups in host memory at once
  std::size_t sub_group_size = 1'000'000'000;   // zero_optimization.sub_group_size: elements Adam updates per swap-in
  std::size_t block_size = 1'048'576;           // aio.block_size: bytes per I/O request submitted
  int queue_depth = 8;                          // aio.queue_depth: requests in flight
};

// Stage 3's parameter shard on the NVMe tier (offload_param.device "nvme"): each rank's slices in
// a swap file of its own, read into a few host buffers ahead of their gathers. DeepSpeed's keys
// and defaults.
struct NvmeParamOptions {
  std::string path;                        // offload_param.nvme_path: a folder; each rank swaps in a folder of its own in it
  int buffer_count = 5;                    // offload_param.buffer_count: unit slices in host memory at once (read ahead, or updated)
  std::size_t buffer_size = 100'000'000;   // offload_param.buffer_size: elements a buffer holds; no unit slice may be larger
  std::size_t max_in_cpu = 1'000'000'000;  // offload_param.max_in_cpu: read and checked; zero keeps only the buffers in host memory
};

// ZenFlow (DeepSpeed's zero_optimization.zenflow): stall-free offload. Every step, the top
// topk_ratio of each 2-D weight's columns (by the L1 norm of the column's gradient, chosen anew
// every select_interval steps) and every 1-D parameter are updated by Adam on the device, with
// state kept there; the whole gradient is accumulated on the CPU's side (host memory, or the NVMe
// tier's swap file) and the CPU's Adam applies it to the other columns every update_interval steps
// (overlap_step: in the background, reaching the parameters one interval late). docs/offload.md#zenflow.
struct ZenflowOptions {
  bool enabled = false;
  double topk_ratio = 0.1;      // in (0, 1]: columns of each 2-D weight (each rank's slice of it) updated on the device
  int select_interval = 0;      // steps between selections; 0: once, after the warm-up (select_strategy "auto"/"epoch")
  int update_interval = 1;      // steps between the CPU's updates (>= 1)
  int full_warm_up_rounds = 0;  // first steps with the whole update on the CPU every step, no selection
  bool overlap_step = false;    // the CPU's update runs during the next interval, applied at its end
};

// ZeRO-Offload (DeepSpeed's offload_optimizer / offload_param, device "cpu"; "nvme": nvme below).
struct OffloadOptions {
  bool optimizer = false;  // Adam's state, the fp32 master parameters and the gradient shard on the host tier; Adam on the CPU
  bool params = false;     // stage 3: the parameter shards on the host tier too, brought to the device unit by unit
  // Page-lock the host buffers (falls back to pageable memory with a warning). DeepSpeed's code
  // default is false (its newest docs say true).
  bool pin_memory = false;
  // The delayed parameter update (ZeRO-Offload's DPU; ours: offload_optimizer.delayed_update):
  // after `warmup_steps` ordinary steps, the CPU applies step t's update while the device runs
  // step t+1's forward and backward with the parameters from before step t. Gradients are then
  // one step stale.
  bool delayed_update = false;
  int warmup_steps = 0;
  // offload_optimizer.device "nvme" (with `optimizer` true): the masters and moments live in
  // nvme.path's swap files instead of host memory; the gradient shard stays in host memory.
  bool optimizer_nvme = false;
  NvmeOptions nvme;
  // offload_param.device "nvme" (with `params` true): the stage-3 parameter shard lives in
  // param_nvme.path's swap files instead of host memory.
  bool params_nvme = false;
  NvmeParamOptions param_nvme;
  ZenflowOptions zenflow;  // zero_optimization.zenflow (with offload_optimizer "cpu" or "nvme")
};

// Stage 3's schedule: DeepSpeed's stage3_* keys, counted in elements, with zero's defaults. Where
// DeepSpeed defaults to a persistence threshold of 1e5 and a reuse distance of 1e9, which keep a
// small model whole between uses, zero keeps stage 3's promise (one unit whole at a time, the
// next one on its way) unless asked.
struct Stage3Options {
  // While a unit computes, the units used next (in the schedule's order of use, forward then
  // backward) are gathered ahead as long as they add up to at most this many elements.
  // -1: the next unit only, when the current one borrows none (zero's default); 0: none ahead.
  std::int64_t prefetch_bucket = -1;
  // No gather ahead starts that would make more elements whole at once than this.
  std::int64_t max_live = 1'000'000'000;
  // Units of fewer elements stay whole for the whole run, on the device: never gathered before
  // use, their slices updated by the optimizer and all-gathered once after the step (as in
  // stage 2): less traffic, more memory. 0: none.
  std::int64_t persistence_threshold = 0;
  // A unit used again within this micro-batch after fewer than this many elements of other
  // uses stays whole in between instead of being freed and gathered again. 0: none.
  std::int64_t max_reuse_distance = 0;
};

// Mixed precision (DeepSpeed's bf16 and fp16 sections). `compute` is the dtype of the parameters
// the stages hold and the model reads, of the gradients, and of the collectives; with a 16-bit
// compute dtype the optimizer keeps f32 master parameters beside Adam's f32 moments (K = 12) and
// writes the 16-bit parameters from them in the same pass. fp16 scales the loss (loss_scaler).
struct Precision {
  Dtype compute = Dtype::kF32;
  LossScalerConfig loss_scaler;  // fp16 only
  bool mixed() const { return compute != Dtype::kF32; }
};

// The optimizer: Adam/AdamW (AdamConfig::decoupled), or DeepSpeed's Lamb (lamb.h), which
// takes lr, betas, eps, weight_decay and bias_correction from AdamConfig and the rest from LambConfig,
// or DeepSpeed's 1-bit Adam (OneBitAdamConfig) or 0/1 Adam (ZeroOneAdamConfig), stage 0 only.
enum class OptimizerKind { kAdam, kLamb, kOneBitAdam, kZeroOneAdam };
// 1-bit and 0/1 Adam: the optimizers that compress their all-reduce, at stage 0 only.
inline bool compresses_all_reduce(OptimizerKind k) { return k == OptimizerKind::kOneBitAdam || k == OptimizerKind::kZeroOneAdam; }

// 1-bit Adam (Tang et al., 2021; DeepSpeed's OnebitAdam), with AdamConfig's lr, betas, eps and
// weight_decay (decoupled, no bias correction, as DeepSpeed's). Its first `freeze_step` steps
// are Adam over all-reduced gradients (the first of them, as in DeepSpeed, only initialises:
// it updates nothing); after them the second moment is frozen and each step's momentum, updated
// from the rank's own gradient, is averaged by the error-compensated 1-bit compressed all-reduce
// (engine/compressed_all_reduce.h) in place of the gradient all-reduce.
struct OneBitAdamConfig {
  std::int64_t freeze_step = 100000;  // DeepSpeed's default
};

// 0/1 Adam (Lu et al., 2022; DeepSpeed's ZeroOneAdam), with AdamConfig's lr, betas, eps and
// weight_decay as 1-bit Adam's. Until var_freeze_step the variance is updated only on steps whose
// gradient is all-reduced, at intervals that double every var_update_scaler updates; the other
// steps average the gradient through the 1-bit compressed all-reduce. After it the variance is
// frozen and ranks take local steps, synchronising (one compressed all-reduce of the accumulated
// update) every local_step_interval steps, an interval that doubles every local_step_scaler
// steps up to local_step_clipper. DeepSpeed's defaults.
struct ZeroOneAdamConfig {
  std::int64_t var_freeze_step = 100000;
  std::int64_t var_update_scaler = 16;
  std::int64_t local_step_scaler = 32678;
  std::int64_t local_step_clipper = 16;
};

struct EngineSettings {
  int stage = 0;  // ZeRO stage: 0 (DDP), 1, 2 or 3
  OffloadOptions offload;
  // DeepSpeed's reduce_bucket_size and allgather_bucket_size (default 5e8 each): at most this
  // many elements (all ranks' together) in one piece of a gradient reduction or a parameter
  // gather. A unit larger than a bucket moves in bucket-sized pieces, which bounds the
  // communication scratch by the bucket, not the unit; the bits do not change. 0: no bound but
  // the transport's own.
  std::size_t reduce_bucket_elements = 500'000'000;
  std::size_t allgather_bucket_elements = 500'000'000;
  // DeepSpeed's overlap_comm: gradient reductions run while backward goes on; false: each is
  // waited for where it is issued (the same bits, no overlap). zero's default is true in every
  // stage (DeepSpeed's: stage 3 only).
  bool overlap_comm = true;
  Stage3Options stage3;
  Precision precision;
  // Max global gradient norm; 0: no clipping (DeepSpeed's code default). With clipping (as with
  // fp16's overflow check and Lamb) the optimizer waits for the whole reduced gradient before it
  // starts, which changes when offload's host Adam runs and what is held meanwhile.
  float gradient_clipping = 0.0f;
  // DeepSpeed's gradient_predivide_factor f (prescale_gradients: f = world size): each rank's
  // gradient is divided by f before the sum, and the sum by N * micro-batches / f after it, in
  // place of the one division by N * micro-batches. 1: that one division, as without it.
  double gradient_predivide_factor = 1.0;
  // Compute the global gradient norm every step even without clipping (zero train reports it):
  // one more small all-gather per step.
  bool report_grad_norm = false;
  // Hybrid sharding (DeepSpeed's zero_optimization.mics_shard_size; FSDP's HYBRID_SHARD): stages
  // 1-3 shard the state among groups of this many consecutive ranks instead of the world; the
  // groups replicate it. Gradients are reduce-scattered in the group, then all-reduced across
  // the groups. -1: off (shard among the world). It must divide the world size (check_world).
  int mics_shard_size = -1;
  // ZeRO++ (stage 3 only; docs/zeropp.md). qwZ, DeepSpeed's zero_quantized_weights: every
  // parameter all-gather of a unit sends int8 in blocks with one f32 scale each (engine/quantize.h)
  // and the unit is dequantised on arrival; the masters stay exact. hpZ, DeepSpeed's
  // zero_hpz_partition_size H (1: off): after a unit's forward gather each rank keeps its 1/H of
  // it, partitioned among H ranks of its node, so the backward gathers it inside the node.
  bool quantized_weights = false;
  int hpz_partition_size = 1;
  // ZeRO++'s qgZ (DeepSpeed's zero_optimization.zero_quantized_gradients), stage 3 only: the
  // gradient reduce-scatter as a hierarchical all-to-all of 4-bit blocks, inside each node then
  // across (engine/quantized_reduce_scatter.h); on one node, as DeepSpeed, the exact reduce-scatter.
  bool zero_quantized_gradients = false;
  OptimizerKind optimizer = OptimizerKind::kAdam;
  AdamConfig adam;
  LambConfig lamb;  // OptimizerKind::kLamb only
  OneBitAdamConfig onebit;  // OptimizerKind::kOneBitAdam only
  ZeroOneAdamConfig zero_one;  // OptimizerKind::kZeroOneAdam only
};

// One problem of a set of settings: the DeepSpeed key it is about ("zero_optimization.offload_param")
// and what is wrong and what to do ("offloads parameters, which only stage 3 shards; ...").
struct SettingProblem {
  std::string key;
  std::string what;
};

// The one validation of the settings' combinations and ranges (stage, offload and its delayed
// update, stage 3's sizes, precision, clipping, predivide, Lamb): every problem found. The
// optimizer's own hyperparameters are checked by optim/ (adam_step_scalars, lamb_step_scalars).
std::vector<SettingProblem> settings_problems(const EngineSettings& settings);

// ConfigError "[<component>] <key> <what>" with every problem (numbered when several), if any.
void check_settings(const EngineSettings& settings, const std::string& component);

// What the settings need of a world of `world_size` ranks (mics_shard_size divides it), checked
// where the world size is known before any rank starts (config/, the planner) and by the engine.
std::vector<SettingProblem> world_problems(const EngineSettings& settings, int world_size);
void check_world(const EngineSettings& settings, int world_size, const std::string& component);
// What the settings need of the nodes, given the ranks on each node (hpZ's partition size divides
// them, and they are equal). Checked by the engine from its communicator's topology and, for
// thread ranks arranged as nodes, by the CLI before any rank starts.
std::vector<SettingProblem> node_problems(const EngineSettings& settings, const std::vector<int>& ranks_on_each_node);
void check_nodes(const EngineSettings& settings, const std::vector<int>& ranks_on_each_node, const std::string& component);
// The ranks that share one copy of the state: mics_shard_size when set, else the world size.
int shard_group_size(const EngineSettings& settings, int world_size);

}  // namespace zero
