// The LLaMA's own kernels behind one table, as the GPT's are (gpt_kernel_table.h): what LLaMA
// needs beyond the GPT's table (whose matrix products, attention, softmax and memory operations it
// reuses). A backend that has them registers make_llama_kernels (registry.h); one that has not
// (cuda, for now) leaves it null, and asking for a LLaMA there is a ConfigError before any work
// starts (require_llama_kernels). Shapes and meanings are those of src/backends/cpu/llama_kernels.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "zero/gpt_kernel_table.h"

namespace zero {

class LlamaKernels {
 public:
  virtual ~LlamaKernels() = default;

  virtual void embedding_forward(float* out, const std::int32_t* tokens, const float* wte, int N, int C) = 0;
  virtual void embedding_backward(float* dwte, const float* dout, const std::int32_t* tokens, int N, int C) = 0;
  virtual void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, float eps, int N, int C) = 0;
  virtual void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w,
                                const float* rstd, int N, int C) = 0;
  // cos, sin: the rotary table (T, hd/2) each, in the GPT table's memory (GptKernels::alloc).
  virtual void rope_pack_forward(float* qkv, const float* q, const float* k, const float* v, const float* cos,
                                 const float* sin, int N, int T, int NH, int NKV, int hd) = 0;
  virtual void rope_pack_backward(float* dq, float* dk, float* dv, const float* dqkv, const float* cos, const float* sin,
                                  int N, int T, int NH, int NKV, int hd) = 0;
  virtual void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t n) = 0;
  virtual void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up,
                               std::int64_t n) = 0;
};

// The table of backend `compute.device` (ConfigError where it has none, saying which do).
std::unique_ptr<LlamaKernels> make_llama_kernels(const GptCompute& compute);
// ConfigError unless backend `device` has LLaMA kernels: "`what`: ..." (what: "[config] model.type llama").
void require_llama_kernels(const std::string& device, const std::string& what);

}  // namespace zero
