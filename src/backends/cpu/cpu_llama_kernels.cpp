// The cpu LLaMA table (llama_kernels.cpp on host memory): the cpu, strict and counting backends'.
// Each kernel is a span of the calling thread's work clock (common/work_clock.h).
#include "backends/llama_kernel_table.h"

#include "backends/cpu/llama_kernels.h"
#include "common/work_clock.h"

namespace zero {
namespace {

class CpuLlamaKernels final : public LlamaKernels {
 public:
  void embedding_forward(float* out, const std::int32_t* tokens, const float* wte, int N, int C) override {
    WorkSpan span(Work::kEmbedding);
    llama::embedding_forward(out, tokens, wte, N, C);
  }
  void embedding_backward(float* dwte, const float* dout, const std::int32_t* tokens, int N, int C) override {
    WorkSpan span(Work::kEmbedding);
    llama::embedding_backward(dwte, dout, tokens, N, C);
  }
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, float eps, int N, int C) override {
    WorkSpan span(Work::kNorm);
    llama::rmsnorm_forward(out, rstd, inp, w, eps, N, C);
  }
  void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, const float* rstd,
                        int N, int C) override {
    WorkSpan span(Work::kNorm);
    llama::rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C);
  }
  void rope_pack_forward(float* qkv, const float* q, const float* k, const float* v, const float* cos, const float* sin,
                         int N, int T, int NH, int NKV, int hd) override {
    WorkSpan span(Work::kAttention);
    llama::rope_pack_forward(qkv, q, k, v, cos, sin, N, T, NH, NKV, hd);
  }
  void rope_pack_backward(float* dq, float* dk, float* dv, const float* dqkv, const float* cos, const float* sin, int N,
                          int T, int NH, int NKV, int hd) override {
    WorkSpan span(Work::kAttention);
    llama::rope_pack_backward(dq, dk, dv, dqkv, cos, sin, N, T, NH, NKV, hd);
  }
  void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t n) override {
    WorkSpan span(Work::kPointwise);
    llama::swiglu_forward(out, gate, up, n);
  }
  void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up,
                       std::int64_t n) override {
    WorkSpan span(Work::kPointwise);
    llama::swiglu_backward(dgate, dup, dout, gate, up, n);
  }
};

}  // namespace

std::unique_ptr<LlamaKernels> make_cpu_llama_kernels(const GptCompute&) { return std::make_unique<CpuLlamaKernels>(); }

}  // namespace zero
