// Model FLOPs utilisation (MFU) of a GPT run on a GPU, as PaLM (appendix B) and nanoGPT count it:
//   model FLOPs per token = 6 N + 12 L C T
// 6N: forward and backward through every weight (2 FLOPs a multiply-add, backward twice the
// forward), N all parameters (the tied wte counted once: it is one matrix, used by the head);
// 12 L C T: attention's two products QK^T and AV (2 T C FLOPs each per token and layer forward,
// x3 with backward), counting the whole T x T square, not the causal half (llm.c counts
// 6 L C T). Recomputation under activation checkpointing is not counted (it is not the model's).
// MFU = tokens/s per device x FLOPs per token / the device's dense bf16 peak, one of its
// backend's facts (backends/registry.h: BackendFacts::peak_bf16; 0 where unknown: no MFU).
#pragma once

#include "config/config.h"
#include "model/gpt_shape.h"

namespace zero::cli {

inline double model_flops_per_token(const GptShape& s) {
  return 6.0 * static_cast<double>(s.num_parameters()) + 12.0 * s.layers * s.channels * static_cast<double>(s.seq_len);
}

// The same count for the config's model (a LLaMA: 6N + 12 L C T with C its hidden size).
inline double model_flops_per_token(const ModelSection& m) {
  if (!m.is_llama()) return model_flops_per_token(m.shape);
  const LlamaShape& s = m.llama;
  return 6.0 * static_cast<double>(s.num_parameters()) + 12.0 * s.layers * s.hidden * static_cast<double>(s.seq_len);
}

// tokens_per_second: one device's (one rank per device); peak_flops: that device's.
inline double model_flops_utilisation(double tokens_per_second, const GptShape& s, double peak_flops) {
  return tokens_per_second * model_flops_per_token(s) / peak_flops;
}
inline double model_flops_utilisation(double tokens_per_second, const ModelSection& m, double peak_flops) {
  return tokens_per_second * model_flops_per_token(m) / peak_flops;
}

}  // namespace zero::cli
