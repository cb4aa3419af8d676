// A LLaMA decoder (Hugging Face's LlamaForCausalLM): a token embedding, L blocks of pre-RMSNorm
// causal self-attention with rotary position embeddings (rotate_half, rope_theta) and grouped-
// query attention, and a pre-RMSNorm SwiGLU MLP (down(silu(gate(x)) * up(x))), a final RMSNorm
// and an LM head, untied or tied to the embedding; no biases. Units and names: llama_shape.h.
//
// Built as the GPT is (gpt.h): the engine owns parameters and gradients, this class the
// activations of one micro-batch, allocated once through the ledger (llama_activations.h).
// Matrix products, causal attention, the softmax and the model's memory come from the GPT's
// kernel table; RMSNorm, RoPE with the key/value repeat, SwiGLU and the embedding from the LLaMA
// table (llama_kernel_table.h), which a backend may lack: a ConfigError at construction then.
// Grouped-query attention runs as multi-head attention on keys and values repeated per query
// head (Hugging Face's repeat_kv), their gradients summed back per key/value head.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "zero/gpt_kernel_table.h"
#include "zero/llama_kernel_table.h"
#include "zero/module.h"
#include "model/language_model.h"
#include "zero/ledger.h"
#include "model/llama_activations.h"
#include "model/llama_shape.h"

namespace zero {

class Llama final : public LanguageModel {
 public:
  Llama(const LlamaShape& shape, int micro_batch, Ledger& ledger, const GptCheckpointing& checkpointing = {},
        const GptCompute& compute = {});

  // Bytes the constructor (given the same arguments) allocates for activations, by tier: what the
  // planner uses.
  static ActivationBytes activation_bytes(const LlamaShape& shape, int micro_batch, const GptCheckpointing& checkpointing = {},
                                          const GptCompute& compute = {});

  // This rank's micro-batch: inputs and next-token targets, (B, T) each, token ids < V.
  void set_batch(const std::int32_t* inputs, const std::int32_t* targets) override;

  std::vector<UnitSpec> units() const override { return shape_.units(); }
  void forward(int unit, const UnitViews& views) override;
  void backward(int unit, const UnitViews& views) override;
  bool reads_bf16(int unit, int index) const override;
  float loss() const override { return loss_; }

  // After a forward: the logits and the next-token distribution at sequence b, position t, (V)
  // f32 each, in host memory (valid until the next call).
  const float* logits(int b, int t) const { return row(llama::kLogits, b, t); }
  const float* probs(int b, int t) const override { return row(llama::kProbs, b, t); }
  const LlamaShape& shape() const { return shape_; }
  int micro_batch() const override { return B_; }
  int seq_len() const override { return shape_.seq_len; }

 private:
  void block_forward(int l, const UnitViews& v, bool recompute = false);
  void block_backward(int l, const UnitViews& v);
  void attention_backward(int l, const UnitViews& v);
  void head_forward(const UnitViews& v);
  void head_backward(const UnitViews& v);
  const float* block_input(int l) const;
  const float* row(int act, int b, int t) const;
  int slot(int l) const { return ckpt_.enabled ? 0 : l; }  // the layer slot of block l's internals

  LlamaShape shape_;
  int B_;
  GptCheckpointing ckpt_;
  std::unique_ptr<GptKernels> k_;               // matrix products, attention, softmax, memory
  std::unique_ptr<LlamaKernels> lk_;            // RMSNorm, RoPE, SwiGLU, embedding
  std::vector<std::int32_t> inputs_, targets_;  // (B, T), host
  GptKernels::Tokens tokens_{};                 // the same where the kernels read them
  std::vector<ModelMemory> buffers_;            // every activation, in activation_plan order
  std::vector<float*> acts_;                    // the same, by llama::Act
  mutable std::vector<float> row_;              // (V) a row read back, when not host-addressable
  float loss_ = 0.0f;
};

}  // namespace zero
