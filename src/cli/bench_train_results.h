// `zero bench train`'s results, as rank 0 prints them and writes them to JSON
// (cli/bench_train.cpp measures them).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "model/gpt_shape.h"
#include "zero/communicator.h"
#include "zero/dtype.h"

namespace zero::cli {

// Where one step's time went on rank 0's compute thread, in ms per timed step (the parts add up
// to forward + backward + optimizer step), and the tokens per second if a step took only the
// linear layers' products as timed inside the steps.
struct Breakdown {
  double step = 0, matmul = 0, attention = 0, norm = 0, pointwise = 0, loss = 0, embedding = 0, optimizer = 0;
  double wait_fb = 0, wait_step = 0;
  double copy = 0, allocate = 0;   // the device's copies and casts, its allocations (Work::kCopy, kAllocate)
  double rest = 0;                 // the remainder: the engine's own loops, packing, scheduling
  double gemm_limit_in_step = 0;   // tokens/s, all ranks
  double other_kernels() const { return attention + norm + pointwise + loss + embedding; }
};

// A stage's figures for one model, as printed and written to JSON (rank 0's view).
struct StageResult {
  int stage = 0;
  bool checkpointing = false;
  std::uint64_t activation_bytes = 0;  // its model's activations, device tier (allocated once)
  double seconds = 0;              // sum over timed steps of the barrier-to-barrier windows
  std::vector<double> window_ms;   // those windows, rank 0's, per timed step
  std::vector<double> step_ms;     // per timed step, max over ranks of StageRun::local_ms
  double compute_ms = 0, optimizer_ms = 0;  // rank 0's, as in StageRun
  double tokens_per_second = 0;    // global tokens in the timed steps / seconds
  double mfu = 0;                  // a device with a known peak: model FLOPs utilisation per rank's device (cli/mfu.h)
  double peak_flops = 0;           // that peak (bf16, dense), from the backend's facts
  float first_loss = 0, last_loss = 0;  // rank 0's, first warm-up step and last timed step
  // Against the first listed stage (1 for that stage itself); above 1 means faster.
  double tokens_ratio = 1;         // tokens/s ratio
  std::vector<double> step_ratios; // per timed step, first stage's step_ms / this stage's: the two
                                   // ran back to back, so each ratio saw nearly the same machine
  double median_step_ratio = 1, best_step_ratio = 1;  // median of step_ratios; fastest step vs fastest
  bool losses_match = true;        // every step's loss, on every rank, the same bits as the first stage's
  std::string weights_sha256;      // of the final full parameters
  std::uint64_t state_bytes = 0, sent_bytes = 0;  // rank 0's, as in StageRun
  Breakdown breakdown;             // rank 0's
  // Per timed step, its round's pass of the GEMM-bound limit over the step's window: the fraction of
  // the limit that step ran at, each from two times taken back to back. Empty without a limit.
  std::vector<double> limit_ratios;
  double limit_ratio = 0;          // their median
};

struct ModelResult {
  std::string model;
  Dtype dtype = Dtype::kF32;
  std::string products;            // how the matrix products were computed (Backend::describe_matmul)
  GptShape shape;
  std::int64_t parameters = 0;
  std::uint64_t engine_bytes = 0;  // rank 0's ledger, device tier, after building the model and engines
  std::uint64_t activation_bytes = 0;  // the model's activations, device tier (constant: allocated once)
  std::vector<StageResult> stages;
  bool identical = true;           // every stage's losses and final weights match the first stage's
  // The GEMM-bound limit: the step's own matrix products (cli/step_products.h) timed alone, every
  // rank at once (so every core is busy, as in a step), through the products this run uses; the
  // tokens per second of a step that were only those. 0 where the products do not run on the host.
  double gemm_flops = 0;           // per rank per step
  double gemm_seconds = 0;         // per rank per step, the slowest rank's: the median pass
  std::vector<double> gemm_passes; // every timed pass, one after each round of timed steps
  double gemm_limit = 0;           // tokens/s, all ranks, at the median pass
};

// "fp32", or "bf16 mixed precision".
std::string precision_name(Dtype d);
// "0,1,2,3".
std::string join(const std::vector<int>& stages);
// "fp32, then bf16 mixed precision, each model in turn".
std::string precisions_text(const std::vector<Dtype>& dtypes);

// One model's lines: its figures per stage with their ratios to the first, the bit-identity
// verdict and the breakdown of rank 0's step beside the GEMM-bound limit.
void print_model(const ModelResult& m, int steps, Determinism determinism);
// With several precisions: each one's tokens/s against the first's, stage by stage.
void print_precision_ratios(const std::vector<ModelResult>& by_dtype);
// Appends one entry per (model, stage) to the JSON's results.
void append_json(const ModelResult& m, nlohmann::json& results);

}  // namespace zero::cli
