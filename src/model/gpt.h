// A GPT-2-style decoder: token and position embeddings, L pre-LayerNorm blocks of
// causal multi-head self-attention and a GELU MLP, a final LayerNorm, and an LM head tied to the
// token embedding. Its units are listed in gpt_shape.h; the head borrows the embedding unit.
//
// The engine owns parameters and gradients; this class owns the activations of one micro-batch
// (B sequences of T tokens), allocated once through the ledger (category activations), so the
// ledger's peak is the whole story. With activation checkpointing each block keeps only its input
// and recomputes its forward just before its backward, with the same kernels in the same order
// (but the last product, whose output backward does not read),
// so the gradients are the same bits (gpt_activations.h: what is kept where).
//
// Its kernels and its activation memory come from a kernel table (gpt_kernel_table.h) chosen by
// the device's name: the cpu table, or the cuda one (activations in GPU memory, cuBLAS).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zero/module.h"
#include "model/language_model.h"
#include "zero/ledger.h"
#include "model/gpt_activations.h"
#include "zero/gpt_kernel_table.h"
#include "model/gpt_shape.h"

namespace zero {

class Gpt final : public LanguageModel {
 public:
  Gpt(const GptShape& shape, int micro_batch, Ledger& ledger, const GptCheckpointing& checkpointing = {},
      const GptCompute& compute = {});

  // Bytes the constructor (given the same arguments) allocates for activations and backward
  // scratch, by tier: what the planner uses. ConfigError for cpu checkpointing without checkpointing.
  static ActivationBytes activation_bytes(const GptShape& shape, int micro_batch, const GptCheckpointing& checkpointing = {},
                                          const GptCompute& compute = {});

  // This rank's micro-batch: inputs and next-token targets, (B, T) each, token ids < V.
  void set_batch(const std::int32_t* inputs, const std::int32_t* targets) override;

  std::vector<UnitSpec> units() const override { return shape_.units(); }
  void forward(int unit, const UnitViews& views) override;
  void backward(int unit, const UnitViews& views) override;
  bool reads_bf16(int unit, int index) const override;
  float loss() const override { return loss_; }

  // After a forward: the next-token distribution at sequence b, position t: (V) f32, in host
  // memory (the cuda table's is read back into a row of the model's, valid until the next call).
  const float* probs(int b, int t) const override;
  const GptKernels& kernels() const { return *k_; }
  const GptShape& shape() const { return shape_; }
  int micro_batch() const override { return B_; }
  int seq_len() const override { return shape_.seq_len; }
  const GptCheckpointing& checkpointing() const { return ckpt_; }

 private:
  void embedding_forward(const UnitViews& v);
  // recompute: the checkpointed block's forward again, for its backward (its output is kept already)
  void block_forward(int l, const UnitViews& v, bool recompute = false);
  void head_forward(const UnitViews& v);
  void block_backward(int l, const UnitViews& v);
  void head_backward(const UnitViews& v);
  void embedding_backward(const UnitViews& v);
  const float* block_input(int l) const;
  // Checkpointing (gpt_checkpoint.cpp). The layer slot of block l's internals: l, or 0 when one
  // block's buffers serve all; cpu checkpointing's copies of kept inputs to and from the host.
  int slot(int l) const { return ckpt_.enabled ? 0 : l; }
  void recompute_block(int l, const UnitViews& v);
  void stage_block_input(int l);
  void keep_block_input(int l, const float* x);

  GptShape shape_;
  int B_;
  GptCheckpointing ckpt_;
  std::unique_ptr<GptKernels> k_;               // the kernels, and where the activations live
  std::vector<std::int32_t> inputs_, targets_;  // (B, T), host
  GptKernels::Tokens tokens_{};                 // the same where the kernels read them
  std::vector<ModelMemory> buffers_;            // every activation, in activation_plan order
  std::vector<float*> acts_;                    // the same, by index (see gpt.cpp: Act)
  mutable std::vector<float> probs_row_;        // (V) probs() read back, when not host-addressable
  float loss_ = 0.0f;
};

}  // namespace zero
