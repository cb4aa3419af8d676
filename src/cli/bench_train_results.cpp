#include "cli/bench_train_results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/flags.h"
#include "cli/mfu.h"
#include "common/error.h"

namespace zero::cli {

std::string precision_name(Dtype d) { return d == Dtype::kF32 ? "fp32" : cat(dtype_deepspeed_name(d), " mixed precision"); }

std::string join(const std::vector<int>& stages) {
  std::string s;
  for (int k : stages) {
    if (!s.empty()) s += ',';
    s += std::to_string(k);
  }
  return s;
}

namespace {

// "2949 tokens/s | 694 ms/step (best 647; forward+backward 600, optimizer step 40)"
std::string figures(const StageResult& r, int steps) {
  const double best = *std::min_element(r.step_ms.begin(), r.step_ms.end());
  char line[256];
  std::snprintf(line, sizeof line,
                "%9.0f tokens/s | %.0f ms/step (best %.0f; forward+backward %.0f, optimizer step %.0f) | model state %.1f MiB/rank"
                " | sent %.2f MiB/step | activations %s",
                r.tokens_per_second, r.seconds * 1e3 / steps, best, r.compute_ms, r.optimizer_ms, r.state_bytes / 1048576.0,
                r.sent_bytes / 1048576.0, format_bytes(r.activation_bytes).c_str());
  if (r.mfu <= 0) return line;
  return cat(line, " | MFU ", std::round(r.mfu * 1000) / 10, "% of ", r.peak_flops / 1e12, " TFLOP/s bf16 (6N + 12LCT)");
}

std::string run_name(const StageResult& r) { return cat("stage ", r.stage, r.checkpointing ? " +ckpt" : ""); }

// "stage 0: 694 ms = matmul 420 (61%) + other kernels 120 (...) + optimizer 40 + waiting 60 (...) + rest 54 |
//  at 0.68 of the GEMM-bound limit", after a line with that limit.
void print_breakdown(const ModelResult& m) {
  if (m.gemm_limit > 0) {
    const auto [low, high] = std::minmax_element(m.gemm_passes.begin(), m.gemm_passes.end());
    std::printf("  GEMM-bound limit %.0f tokens/s: the step's own matrix products alone (%.1f GFLOP per rank), every rank at once, "
                "%.0f ms (%.0f GFLOP/s per rank; the median of %zu passes, one after each round of timed steps: %.0f-%.0f ms)\n",
                m.gemm_limit, m.gemm_flops / 1e9, m.gemm_seconds * 1e3, m.gemm_flops / m.gemm_seconds / 1e9, m.gemm_passes.size(),
                *low * 1e3, *high * 1e3);
  }
  std::printf("  where rank 0's step went (ms per step on its compute thread; waiting = on a collective or a copy not yet done; "
              "copies = the device's copies, casts and adds between kernels; allocating = its allocations and zeroing; "
              "rest = the engine's other work):\n");
  for (const StageResult& r : m.stages) {
    const Breakdown& b = r.breakdown;
    const auto pct = [&](double x) { return b.step > 0 ? 100 * x / b.step : 0.0; };
    std::printf("    %s: %.0f ms = matmul %.0f (%.0f%%) + other kernels %.0f (attention %.0f, norm %.0f, pointwise %.0f, loss %.0f, "
                "embedding %.0f) + optimizer %.0f + waiting %.0f (forward+backward %.0f, step %.0f) + copies %.0f + allocating %.0f + rest %.0f",
                run_name(r).c_str(), b.step, b.matmul, pct(b.matmul), b.other_kernels(), b.attention, b.norm, b.pointwise, b.loss,
                b.embedding, b.optimizer, b.wait_fb + b.wait_step, b.wait_fb, b.wait_step, b.copy, b.allocate, b.rest);
    if (m.gemm_limit > 0) {
      const auto [low, high] = std::minmax_element(r.limit_ratios.begin(), r.limit_ratios.end());
      std::printf(" | at %.2f of the GEMM-bound limit (each step against its round's pass: median; %.2f-%.2f)", r.limit_ratio, *low, *high);
    }
    std::printf("\n");
  }
}

nlohmann::json breakdown_json(const Breakdown& b) {
  return {{"step", b.step}, {"matmul", b.matmul}, {"attention", b.attention}, {"norm", b.norm}, {"pointwise", b.pointwise},
          {"loss", b.loss}, {"embedding", b.embedding}, {"optimizer", b.optimizer}, {"wait_forward_backward", b.wait_fb},
          {"wait_step", b.wait_step}, {"copy", b.copy}, {"allocate", b.allocate}, {"rest", b.rest}};
}

}  // namespace

// One stage: the line as it always was. Several: a line per stage with its ratios to the first,
// then the bit-identity verdict.
// In fast mode (--determinism fast) stages may differ in the last bits: not an error, and said so.
void print_model(const ModelResult& m, int steps, Determinism determinism) {
  const StageResult& first = m.stages[0];
  std::printf("%-4s %s (%.1fM parameters, activations %s; %s, %s)", m.model.c_str(), m.shape.describe().c_str(), m.parameters / 1e6,
              format_bytes(m.activation_bytes).c_str(), precision_name(m.dtype).c_str(), m.products.c_str());
  if (m.stages.size() == 1) {
    std::printf(": %s | loss %.3f -> %.3f\n", figures(first, steps).c_str(), first.first_loss, first.last_loss);
    print_breakdown(m);
    std::fflush(stdout);
    return;
  }
  std::printf(", all engines built: %.0f MiB per rank in the ledger:\n", m.engine_bytes / 1048576.0);
  for (const StageResult& r : m.stages) {
    std::printf("  %s: %s | %.2fx %s (step ratios: median %.2fx, best %.2fx)\n", run_name(r).c_str(),
                figures(r, steps).c_str(), r.tokens_ratio, run_name(first).c_str(), r.median_step_ratio, r.best_step_ratio);
  }
  std::vector<int> listed;
  for (const StageResult& r : m.stages)
    if (std::find(listed.begin(), listed.end(), r.stage) == listed.end()) listed.push_back(r.stage);
  if (m.identical) {
    std::printf("  loss %.3f -> %.3f: every step's loss on every rank and the final weights (sha256 %.16s...) are "
                "bit-identical across stages %s%s\n",
                first.first_loss, first.last_loss, first.weights_sha256.c_str(), join(listed).c_str(),
                m.stages.size() > listed.size() ? ", without and with activation checkpointing" : "");
  }
  print_breakdown(m);
  if (!m.identical && determinism == Determinism::kFast) {
    std::printf("  losses and weights not compared bit for bit: --determinism fast sums in the transport's order\n");
    std::fflush(stdout);
    return;
  }
  for (const StageResult& r : m.stages) {
    if (!r.losses_match) std::printf("  ERROR: %s's losses differ from %s's; they must be bit-identical\n", run_name(r).c_str(), run_name(first).c_str());
    if (r.weights_sha256 != first.weights_sha256) {
      std::printf("  ERROR: %s's final weights differ from %s's; they must be bit-identical\n", run_name(r).c_str(), run_name(first).c_str());
    }
  }
  std::fflush(stdout);
}

// "fp32", "fp32, then bf16 mixed precision, each model in turn".
std::string precisions_text(const std::vector<Dtype>& dtypes) {
  std::string s = precision_name(dtypes[0]);
  for (std::size_t i = 1; i < dtypes.size(); ++i) s += ", then " + precision_name(dtypes[i]);
  return dtypes.size() > 1 ? s + ", each model in turn" : s;
}

// With several precisions: each one's tokens/s against the first's, stage by stage (the same
// model, one after the other in this run).
void print_precision_ratios(const std::vector<ModelResult>& by_dtype) {
  for (std::size_t d = 1; d < by_dtype.size(); ++d) {
    for (std::size_t i = 0; i < by_dtype[d].stages.size(); ++i) {
      const StageResult &r = by_dtype[d].stages[i], &first = by_dtype[0].stages[i];
      std::printf("  %s / %s, %s: %.2fx tokens/s (best step %.2fx)\n", dtype_deepspeed_name(by_dtype[d].dtype),
                  dtype_deepspeed_name(by_dtype[0].dtype), run_name(r).c_str(), r.tokens_per_second / first.tokens_per_second,
                  *std::min_element(first.step_ms.begin(), first.step_ms.end()) / *std::min_element(r.step_ms.begin(), r.step_ms.end()));
    }
  }
  std::fflush(stdout);
}


// A flat list, one entry per (model, stage), so that a single-stage run's results[0] reads as before.
void append_json(const ModelResult& m, nlohmann::json& results) {
  const GptShape& s = m.shape;
  for (const StageResult& r : m.stages) {
    results.push_back({{"model", m.model}, {"dtype", dtype_deepspeed_name(m.dtype)}, {"matmul", m.products}, {"stage", r.stage}, {"activation_checkpointing", r.checkpointing}, {"parameters", m.parameters},
                       {"shape", {{"vocab_size", s.vocab_size}, {"n_ctx", s.seq_len}, {"n_embd", s.channels}, {"n_layer", s.layers}, {"n_head", s.heads}}},
                       {"seconds", r.seconds}, {"mfu", r.mfu}, {"model_flops_per_token", model_flops_per_token(s)}, {"step_ms", r.step_ms}, {"tokens_per_second", r.tokens_per_second},
                       {"compute_ms", r.compute_ms}, {"optimizer_ms", r.optimizer_ms}, {"first_loss", r.first_loss},
                       {"last_loss", r.last_loss}, {"engine_bytes_per_rank", m.engine_bytes},
                       {"model_state_bytes_per_rank", r.state_bytes}, {"sent_bytes_per_step", r.sent_bytes},
                       {"activation_bytes_per_rank", r.activation_bytes},
                       {"vs_first_stage", {{"stage", m.stages[0].stage}, {"tokens_per_second_ratio", r.tokens_ratio},
                                           {"step_ratios", r.step_ratios}, {"median_step_ratio", r.median_step_ratio},
                                           {"best_step_ratio", r.best_step_ratio}, {"losses_bit_identical", r.losses_match},
                                           {"weights_bit_identical", r.weights_sha256 == m.stages[0].weights_sha256}}},
                       {"breakdown_ms", breakdown_json(r.breakdown)}, {"gemm_bound_in_step_tokens_per_second", r.breakdown.gemm_limit_in_step},
                       {"gemm_limit", {{"tokens_per_second", m.gemm_limit}, {"flops_per_rank_step", m.gemm_flops},
                                       {"seconds_per_step", m.gemm_seconds}, {"seconds_per_pass", m.gemm_passes},
                                       {"step_ratios", r.limit_ratios}, {"ratio", r.limit_ratio}}},
                       {"weights_sha256", r.weights_sha256}});
  }
}

}  // namespace zero::cli
