// The cpu table (gpt_kernels.cpp on host memory through the ledger), the cpu, strict and counting
// backends' (the one factory is the registry's). The linear layers' matrix products are the run's
// choice (matmul.h: bf16 in a bf16 run where the CPU has bf16 instructions); attention's are f32
// through OpenBLAS in every run (matmul.h says why). Each kernel is a span of the calling thread's
// work clock (common/work_clock.h), for `zero bench train`'s breakdown of the step.
#include "backends/gpt_kernel_table.h"

#include <cstring>

#include "common/error.h"
#include "common/work_clock.h"
#include "backends/cpu/gpt_kernels.h"

namespace zero {
namespace {

class CpuGptKernels final : public GptKernels {
 public:
  explicit CpuGptKernels(const GptCompute& compute)
      : matmul_(make_matmul(choose_matmul(compute.matmul))), attention_matmul_(make_matmul(kAttentionMatmul)) {}
  std::string name() const override { return "cpu"; }

  ModelMemory alloc(Ledger& ledger, Tier tier, std::size_t numel, const std::string& what) override {
    auto* b = new Buffer(ledger, tier, Category::kActivations, numel, what);
    return ModelMemory(b->data(), [b](float*) { delete b; });
  }
  bool host_addressable() const override { return true; }
  void set_stream(void*) override {}  // every kernel runs on the calling thread, at once
  void zero(float* p, std::int64_t n) override { std::memset(p, 0, sizeof(float) * static_cast<std::size_t>(n)); }
  void copy(float* dst, const float* src, std::int64_t n) override {
    std::memcpy(dst, src, sizeof(float) * static_cast<std::size_t>(n));
  }
  void read(float* host_dst, const float* src, std::int64_t n) override { copy(host_dst, src, n); }
  Tokens upload_tokens(const std::int32_t* inputs, const std::int32_t* targets, std::size_t) override {
    return {inputs, targets};
  }

  void encoder_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                       int C) override {
    WorkSpan span(Work::kEmbedding);
    gpt::encoder_forward(out, tokens, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, int B, int T,
                        int C) override {
    WorkSpan span(Work::kEmbedding);
    gpt::encoder_backward(dwte, dwpe, dout, tokens, B, T, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int N,
                         int C) override {
    WorkSpan span(Work::kNorm);
    gpt::layernorm_forward(out, mean, rstd, inp, w, b, N, C);
  }
  void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                          const float* mean, const float* rstd, int N, int C) override {
    WorkSpan span(Work::kNorm);
    gpt::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
  }
  void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) override {
    WorkSpan span(Work::kMatmul);
    gpt::matmul_forward(*matmul_, out, inp, w, bias, N, C, OC);
  }
  void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w, int N,
                       int C, int OC) override {
    WorkSpan span(Work::kMatmul);
    gpt::matmul_backward(*matmul_, dinp, dw, dbias, dout, inp, w, N, C, OC);
  }
  bool takes_bf16_weights() const override { return matmul_->kind() == MatmulKind::kOnednnBf16; }
  void matmul_forward_bf16(float* out, const float* inp, const std::uint16_t* w, const float* bias, int N, int C,
                           int OC) override {
    WorkSpan span(Work::kMatmul);
    gpt::matmul_forward(*matmul_, out, inp, w, bias, N, C, OC);
  }
  void matmul_backward_bf16(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const std::uint16_t* w,
                            int N, int C, int OC) override {
    WorkSpan span(Work::kMatmul);
    gpt::matmul_backward(*matmul_, dinp, dw, dbias, dout, inp, w, N, C, OC);
  }
  void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C, int NH) override {
    WorkSpan span(Work::kAttention);
    gpt::attention_forward(*attention_matmul_, out, preatt, att, qkv, B, T, C, NH);
  }
  void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv, const float* att,
                          int B, int T, int C, int NH) override {
    WorkSpan span(Work::kAttention);
    gpt::attention_backward(*attention_matmul_, dqkv, dpreatt, datt, dout, qkv, att, B, T, C, NH);
  }
  void gelu_forward(float* out, const float* inp, std::int64_t n) override {
    WorkSpan span(Work::kPointwise);
    gpt::gelu_forward(out, inp, n);
  }
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) override {
    WorkSpan span(Work::kPointwise);
    gpt::gelu_backward(dinp, inp, dout, n);
  }
  void residual_forward(float* out, const float* a, const float* b, std::int64_t n) override {
    WorkSpan span(Work::kPointwise);
    gpt::residual_forward(out, a, b, n);
  }
  // The fused calls: the product without its bias (a matmul span), then the bias and the
  // element-wise step in one pass (a pointwise span: the bias's pass moves there from matmul).
  void matmul_gelu_forward(float* out, float* act, const float* inp, GptWeight w, const float* bias, int N, int C,
                           int OC) override {
    if (bias == nullptr) return GptKernels::matmul_gelu_forward(out, act, inp, w, bias, N, C, OC);
    product_forward(out, inp, w, nullptr, N, C, OC);
    WorkSpan span(Work::kPointwise);
    gpt::bias_gelu_forward(out, act, bias, N, OC);
  }
  void matmul_residual_forward(float* res_out, float* out, const float* res_in, const float* inp, GptWeight w,
                               const float* bias, int N, int C, int OC) override {
    product_forward(out, inp, w, nullptr, N, C, OC);
    WorkSpan span(Work::kPointwise);
    gpt::bias_residual_forward(res_out, res_in, out, bias, N, OC);
  }
  void gelu_matmul_backward(float* dinp, float* dw, float* dbias, float* dpre, const float* pre, const float* dact,
                            const float* inp, GptWeight w, int N, int C, int OC) override {
    if (dbias == nullptr) return GptKernels::gelu_matmul_backward(dinp, dw, dbias, dpre, pre, dact, inp, w, N, C, OC);
    {
      WorkSpan span(Work::kPointwise);
      gpt::gelu_backward_bias(dpre, dbias, pre, dact, N, OC);
    }
    product_backward(dinp, dw, nullptr, dpre, inp, w, N, C, OC);
  }
  float softmax_crossentropy_forward(float* probs, float* losses, const float* logits, const std::int32_t* targets, int N,
                                     int V) override {
    WorkSpan span(Work::kLoss);
    return gpt::softmax_crossentropy_forward(probs, losses, logits, targets, N, V);
  }
  void softmax_crossentropy_backward(float* dlogits, const float* probs, const std::int32_t* targets, int N,
                                     int V) override {
    WorkSpan span(Work::kLoss);
    gpt::softmax_crossentropy_backward(dlogits, probs, targets, N, V);
  }

 private:
  std::unique_ptr<Matmul> matmul_;            // the linear layers' (and the LLaMA's) products
  std::unique_ptr<Matmul> attention_matmul_;  // attention's per-head blocks
};

}  // namespace

std::unique_ptr<GptKernels> make_cpu_gpt_kernels(const GptCompute& compute) { return std::make_unique<CpuGptKernels>(compute); }

}  // namespace zero
