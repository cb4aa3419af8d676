// The GPT's kernels behind one table, so that the same Gpt (gpt.cpp: its unit order, activation
// checkpointing, the activation plan) runs on the CPU or on a GPU: the table is chosen once, by
// the device's name, and gpt.cpp calls it where it used to call gpt_kernels.h directly.
//
// Words:
//   table    one implementation of every kernel of gpt_kernels.h, plus the few memory operations
//            the model needs on its own activations (allocate, zero, copy, read back). "cpu":
//            gpt_kernels.cpp on host memory; "cuda": CUDA kernels and cuBLAS on GPU memory
//            (cuda/gpt_cuda_table.cpp, a GPU build only; otherwise a stub that says so).
//   stream   the device's native stream the next kernels issue to (UnitViews::stream(), a
//            cudaStream_t for "cuda"; null: the CPU, or CUDA's legacy default stream, which is
//            ordered after every other blocking stream's work).
//
// Pointers given to the kernels are the table's own memory (alloc) or the engine's (UnitViews):
// device addresses for "cuda". Shapes and meanings are gpt_kernels.h's, argument for argument.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "zero/dtype.h"
#include "zero/ledger.h"

namespace zero {

// Which table a Gpt computes with.
struct GptCompute {
  std::string device = "cpu";  // "cpu" (also the strict and counting devices' models) or "cuda"
  // The matrix products' operands: f32, or bf16 (mixed precision: inputs rounded to bf16,
  // products accumulated and stored in f32). The cpu table computes bf16 products only on a CPU
  // with bf16 instructions (src/backends/cpu/matmul.h), f32 elsewhere.
  Dtype matmul = Dtype::kF32;
};

// A linear layer's weight (OC,C) as the fused calls below take it: bf16 where the table takes bf16
// weights and the run holds them (then f32 is null), else f32.
struct GptWeight {
  const float* f32 = nullptr;
  const std::uint16_t* bf16 = nullptr;
};

// Model memory the table owns: freed (and returned to the ledger) with the pointer.
using ModelMemory = std::unique_ptr<float, std::function<void(float*)>>;

class GptKernels {
 public:
  virtual ~GptKernels() = default;
  virtual std::string name() const = 0;

  // ---- memory ----
  // `numel` f32 of `tier`, zero-filled, accounted in `ledger` (category activations).
  virtual ModelMemory alloc(Ledger& ledger, Tier tier, std::size_t numel, const std::string& what) = 0;
  // True if the host may read the table's memory directly (the cpu table).
  virtual bool host_addressable() const = 0;
  // The stream the following operations issue to (see the top of this file).
  virtual void set_stream(void* stream) = 0;
  virtual void zero(float* p, std::int64_t n) = 0;
  // n floats from src to dst, either in the table's memory of either tier (cpu checkpointing).
  virtual void copy(float* dst, const float* src, std::int64_t n) = 0;
  // n floats from the table's memory into host memory; returns when they are there.
  virtual void read(float* host_dst, const float* src, std::int64_t n) = 0;
  // The micro-batch's tokens, (n) each, where the kernels read them; valid until the next call.
  struct Tokens {
    const std::int32_t* inputs;
    const std::int32_t* targets;
  };
  virtual Tokens upload_tokens(const std::int32_t* inputs, const std::int32_t* targets, std::size_t n) = 0;

  // ---- kernels: gpt_kernels.h ----
  virtual void encoder_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                               int C) = 0;
  virtual void encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, int B, int T,
                                int C) = 0;
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                                 int N, int C) = 0;
  virtual void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                                  const float* mean, const float* rstd, int N, int C) = 0;
  virtual void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) = 0;
  virtual void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w,
                               int N, int C, int OC) = 0;
  // bf16 weights: w (OC,C) given as the engine holds a bf16 run's parameters. Only a table whose
  // linear layers' products take bf16 operands as they are (takes_bf16_weights: the cpu table on a
  // CPU with bf16 instructions) implements these; they give the bits of the f32 calls above given w
  // widened, without the widening (the products round their operands to bf16 anyway).
  virtual bool takes_bf16_weights() const { return false; }
  virtual void matmul_forward_bf16(float* out, const float* inp, const std::uint16_t* w, const float* bias, int N, int C, int OC);
  virtual void matmul_backward_bf16(float* dinp, float* dw, float* dbias, const float* dout, const float* inp,
                                    const std::uint16_t* w, int N, int C, int OC);
  virtual void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C, int NH) = 0;
  virtual void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                                  const float* att, int B, int T, int C, int NH) = 0;
  virtual void gelu_forward(float* out, const float* inp, std::int64_t n) = 0;
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) = 0;
  virtual void residual_forward(float* out, const float* a, const float* b, std::int64_t n) = 0;
  // ---- fused: a linear layer's product and the element-wise step next to it (gpt.cpp's blocks) ----
  // Each gives the bits of the separate calls its default makes (registry.cpp); the cpu table
  // does the element-wise part and the layer's bias in one pass over the rows.
  // out (N,OC) = inp @ w^T + bias, then act = gelu(out) (out kept: gelu_backward reads it).
  virtual void matmul_gelu_forward(float* out, float* act, const float* inp, GptWeight w, const float* bias, int N, int C,
                                   int OC);
  // res_out (N,OC) = res_in + (inp @ w^T + bias); out: the product's scratch, left unspecified.
  virtual void matmul_residual_forward(float* res_out, float* out, const float* res_in, const float* inp, GptWeight w,
                                       const float* bias, int N, int C, int OC);
  // dpre (N,OC) = gelu'(pre) dact (overwritten), then matmul_backward(dinp, dw, dbias, dpre, inp, w):
  // the backward of out = gelu(pre), pre = inp @ w^T + bias.
  virtual void gelu_matmul_backward(float* dinp, float* dw, float* dbias, float* dpre, const float* pre, const float* dact,
                                    const float* inp, GptWeight w, int N, int C, int OC);
  // Returns the mean loss (read back to the host: waits for the stream).
  virtual float softmax_crossentropy_forward(float* probs, float* losses, const float* logits, const std::int32_t* targets,
                                             int N, int V) = 0;
  virtual void softmax_crossentropy_backward(float* dlogits, const float* probs, const std::int32_t* targets, int N,
                                             int V) = 0;

  // matmul_forward or matmul_forward_bf16, as w is given; the same for backward.
  void product_forward(float* out, const float* inp, GptWeight w, const float* bias, int N, int C, int OC);
  void product_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, GptWeight w, int N, int C,
                       int OC);
};

// The table of the backend `compute.device` names (backends/registry.cpp; ConfigError where the
// backend cannot run here, saying why, or for an unknown name).
std::unique_ptr<GptKernels> make_gpt_kernels(const GptCompute& compute);

}  // namespace zero
