// Test helper: trains the test MLP with the engine on one rank and records what the tests check.
#pragma once

#include <string>
#include <vector>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "comm/communicator.h"
#include "comm/thread_world.h"
#include "common/error.h"
#include "engine/engine.h"
#include "memory/ledger.h"
#include "model/mlp.h"

namespace zero::testing {

struct MlpRun {
  int stage = 0;
  int steps = 10;
  int global_batch = 12;  // rows per step, split evenly over 1, 2, 3 or 4 ranks
  std::uint64_t seed = 7;
  int micro_batches = 1;  // gradient accumulation: the global batch in this many micro-batches
  float clipping = 0.0f;
  OffloadOptions offload;
  MlpShape shape;
  std::string device = "cpu";  // "strict": engine memory the host cannot dereference
  std::size_t reduce_bucket = 0, gather_bucket = 0;  // elements, all ranks together; 0: unbounded
  Stage3Options stage3;  // stage 3's prefetch, live cap, persistence, reuse
  bool overlap_comm = true;
  double predivide = 1.0;  // EngineConfig::gradient_predivide_factor
  Dtype dtype = Dtype::kF32;  // compute dtype: bf16/f16 train in mixed precision
  LossScalerConfig scaler = fp16_test_scaler();
  OptimizerKind optimizer = OptimizerKind::kAdam;  // kLamb: with `lamb`'s clamp
  LambConfig lamb;
  int mics_shard_size = -1;  // hybrid sharding: the shard group's size (-1: the world)
  int ranks_per_node = 0;    // run_threads: the thread ranks as nodes of this many (0: one node)
  bool quantized_weights = false;  // ZeRO++ qwZ
  int hpz_partition_size = 1;      // ZeRO++ hpZ (1: off)
  bool quantized_gradients = false;  // qgZ (zero_quantized_gradients)
  // Which rank's rows of the global batch each rank trains on (empty: its own); a permutation
  // changes only the order in which the same gradients are summed.
  std::vector<int> rows_of_rank;
  int synchronize_every = 0;  // > 0: engine.synchronize() after every that many steps (a read-out mid-run)
  OneBitAdamConfig onebit;  // OptimizerKind::kOneBitAdam
  ZeroOneAdamConfig zero_one;  // OptimizerKind::kZeroOneAdam

  // fp16: 2^8, so that most of the test MLP's steps apply (DeepSpeed's default 2^16 would skip
  // several: its gradients are of order 1); the overflow tests set their own.
  static LossScalerConfig fp16_test_scaler() {
    LossScalerConfig c;
    c.initial_scale_power = 8;
    return c;
  }
};

struct RankResult {
  std::vector<float> params;  // whole, after the last step
  std::vector<float> losses;  // this rank's loss per step (its last micro-batch's)
  std::vector<double> grad_norms;  // per step, when clipping
  std::vector<float> loss_scales;  // per step: the scale its loss was multiplied by
  std::vector<bool> skipped;       // per step: fp16 overflow, no update
  TierUsage device;           // ledger, device tier, after the last step
  TierUsage host;             // ledger, host tier, after the last step
  TierUsage nvme;             // ledger, nvme tier (swap files), after the last step
  Traffic step_traffic;       // the last step's
  std::uint64_t step_to_host = 0, step_to_device = 0;  // the last step's bytes over the host link
  std::size_t numel = 0, padded = 0, largest_unit = 0, second_unit = 0;
  int units = 0;
};

inline EngineConfig engine_config(const MlpRun& run) {
  EngineConfig c;
  c.stage = run.stage;
  c.seed = run.seed;
  c.adam.lr = 1e-2f;
  c.adam.weight_decay = 0.1f;
  c.gradient_clipping = run.clipping;
  c.offload = run.offload;
  c.device = run.device;
  c.reduce_bucket_elements = run.reduce_bucket;
  c.allgather_bucket_elements = run.gather_bucket;
  c.stage3 = run.stage3;
  c.overlap_comm = run.overlap_comm;
  c.gradient_predivide_factor = run.predivide;
  c.precision.compute = run.dtype;
  c.precision.loss_scaler = run.scaler;
  c.optimizer = run.optimizer;
  c.lamb = run.lamb;
  c.mics_shard_size = run.mics_shard_size;
  c.quantized_weights = run.quantized_weights;
  c.hpz_partition_size = run.hpz_partition_size;
  c.zero_quantized_gradients = run.quantized_gradients;
  c.onebit = run.onebit;
  c.zero_one = run.zero_one;
  return c;
}

// Runs `run` on this rank of `comm`; every rank of the world must call it.
inline RankResult train_mlp(const MlpRun& run, Communicator& comm, Ledger& ledger) {
  Mlp mlp(run.shape);
  Engine engine(engine_config(run), mlp, comm, ledger);
  RankResult out;
  const int micro_rows = run.global_batch / run.micro_batches;  // rows of one micro-batch, all ranks
  const int rows = micro_rows / comm.size();
  ZERO_CHECK(rows * comm.size() * run.micro_batches == run.global_batch, "the global batch must split evenly");
  for (int s = 0; s < run.steps; ++s) {
    float loss = 0;
    for (int m = 0; m < run.micro_batches; ++m) {
      const int slot = run.rows_of_rank.empty() ? comm.rank() : run.rows_of_rank.at(comm.rank());
      mlp.set_batch(mlp_synthetic_batch(run.shape, run.seed, s, m * micro_rows + slot * rows, rows));
      loss = engine.forward_backward(m + 1 == run.micro_batches);
    }
    const StepReport report = engine.step();
    out.grad_norms.push_back(report.grad_norm);
    out.loss_scales.push_back(report.loss_scale);
    out.skipped.push_back(report.skipped);
    out.losses.push_back(loss);
    if (run.synchronize_every > 0 && (s + 1) % run.synchronize_every == 0) engine.synchronize();
  }
  engine.synchronize();
  out.device = ledger.usage(Tier::kDevice);
  out.host = ledger.usage(Tier::kHost);
  out.nvme = ledger.usage(Tier::kNvme);
  out.step_traffic = engine.last_step_traffic();
  out.step_to_host = engine.last_step_to_host();
  out.step_to_device = engine.last_step_to_device();
  out.params = engine.full_parameters();
  const FlatLayout& layout = engine.layout();
  out.numel = layout.numel();
  out.padded = layout.padded_numel();
  out.units = layout.num_units();
  std::vector<std::size_t> sizes;
  for (int u = 0; u < layout.num_units(); ++u) sizes.push_back(layout.unit(u).padded);
  std::sort(sizes.rbegin(), sizes.rend());
  out.largest_unit = sizes[0];
  out.second_unit = sizes.size() > 1 ? sizes[1] : 0;
  return out;
}

// Runs `run` on n in-process thread ranks; every rank's result.
inline std::vector<RankResult> run_threads(const MlpRun& run, int n) {
  ThreadWorld world(n, {std::chrono::seconds(60), nullptr}, run.ranks_per_node);
  std::vector<RankResult> results(n);
  world.run([&](int r) {
    Ledger ledger;
    auto comm = world.communicator(r, &ledger);
    results[r] = train_mlp(run, *comm, ledger);
  });
  return results;
}

inline const char* dtype_name(Dtype d) { return dtype_label(d); }

// The largest per-tensor relative difference between two whole parameter vectors of the model
// with these units: max|a - b| / max|b| over each parameter tensor, or with `l2` the relative
// norm ||a - b|| / ||b||.
inline double worst_tensor_difference(const std::vector<UnitSpec>& units, const std::vector<float>& a, const std::vector<float>& b,
                                      bool l2 = false) {
  const FlatLayout whole(units, 1);
  double worst = 0;
  for (int u = 0; u < whole.num_units(); ++u)
    for (const ParamPlace& p : whole.unit(u).params) {
      double diff = 0, scale = 0;
      for (std::size_t i = whole.unit(u).flat_offset + p.offset, e = i + p.numel; i < e; ++i) {
        const double d = std::abs(static_cast<double>(a[i]) - b[i]), x = std::abs(static_cast<double>(b[i]));
        diff = l2 ? diff + d * d : std::max(diff, d);
        scale = l2 ? scale + x * x : std::max(scale, x);
      }
      if (scale > 0) worst = std::max(worst, l2 ? std::sqrt(diff / scale) : diff / scale);
    }
  return worst;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// An MLP whose output weight is its input weight transposed: the output unit borrows unit 0.
inline MlpShape tied_shape() { return {{9, 21, 17, 21, 9}, true}; }

}  // namespace zero::testing
