#include "model/llama.h"

#include <algorithm>
#include <cmath>

#include "zero/backend_facts.h"
#include "zero/error.h"
#include "model/batch_tokens.h"
#include "model/linear_layer.h"

namespace zero {
namespace {

using namespace llama;  // the Act indices (llama_activations.h)

// Parameter indices inside a block unit, in llama_shape.cpp's order.
enum BlockParam : int { kInputNorm, kWq, kWk, kWv, kWo, kPostNorm, kWGate, kWUp, kWDown };

}  // namespace

ActivationBytes Llama::activation_bytes(const LlamaShape& shape, int micro_batch, const GptCheckpointing& checkpointing,
                                       const GptCompute& compute) {
  return activation_plan_bytes(shape, micro_batch, checkpointing, find_facts(compute.device, "[model]").attention_scores);
}

Llama::Llama(const LlamaShape& shape, int micro_batch, Ledger& ledger, const GptCheckpointing& checkpointing,
             const GptCompute& compute)
    : shape_(shape), B_(micro_batch), ckpt_(checkpointing), k_(make_gpt_kernels(compute)), lk_(make_llama_kernels(compute)) {
  shape_.validate();
  if (micro_batch <= 0) throw ConfigError(cat("[model] the micro-batch must be at least 1 sequence, not ", micro_batch));
  for (const ActivationEntry& e : activation_plan(shape_, B_, ckpt_, find_facts(compute.device, "[model]").attention_scores)) {
    buffers_.push_back(e.numel == 0 ? nullptr : k_->alloc(ledger, e.tier, static_cast<std::size_t>(e.numel), "LLaMA activations"));
    acts_.push_back(buffers_.back().get());
  }
  // The rotary table is computed once on the host; the tables with LLaMA kernels compute in host memory.
  ZERO_CHECK(k_->host_addressable(), "the LLaMA's rotary table needs host-addressable model memory");
  shape_.rope_table(acts_[kCos], acts_[kSin]);
  inputs_.assign(static_cast<std::size_t>(B_) * shape_.seq_len, 0);
  targets_ = inputs_;
  tokens_ = k_->upload_tokens(inputs_.data(), targets_.data(), inputs_.size());
}

void Llama::set_batch(const std::int32_t* inputs, const std::int32_t* targets) {
  const std::size_t n = inputs_.size();
  check_batch_tokens(inputs, targets, n, shape_.vocab_size);
  std::copy(inputs, inputs + n, inputs_.begin());
  std::copy(targets, targets + n, targets_.begin());
  tokens_ = k_->upload_tokens(inputs_.data(), targets_.data(), n);
}

const float* Llama::row(int act, int b, int t) const {
  const float* r = acts_[act] + (static_cast<std::int64_t>(b) * shape_.seq_len + t) * shape_.vocab_size;
  if (k_->host_addressable()) return r;
  row_.resize(static_cast<std::size_t>(shape_.vocab_size));
  k_->read(row_.data(), r, shape_.vocab_size);
  return row_.data();
}

const float* Llama::block_input(int l) const {
  const std::int64_t BTC = static_cast<std::int64_t>(B_) * shape_.seq_len * shape_.hidden;
  return l == 0 ? acts_[kEmbedded] : acts_[kResidual3] + (l - 1) * BTC;
}

// The blocks' seven weight matrices and an untied lm_head, read only by their linear layers' products.
bool Llama::reads_bf16(int unit, int index) const {
  if (!k_->takes_bf16_weights()) return false;
  if (unit >= 1 && unit <= shape_.layers) return index != kInputNorm && index != kPostNorm;
  return unit == shape_.layers + 1 && index == 1;
}

void Llama::forward(int unit, const UnitViews& v) {
  k_->set_stream(v.stream());
  const int BT = B_ * shape_.seq_len;
  if (unit == 0) return lk_->embedding_forward(acts_[kEmbedded], tokens_.inputs, v.param(0, 0), BT, shape_.hidden);
  if (unit <= shape_.layers) return block_forward(unit - 1, v);
  head_forward(v);
}

void Llama::backward(int unit, const UnitViews& v) {
  k_->set_stream(v.stream());
  const int BT = B_ * shape_.seq_len;
  if (unit == 0) return lk_->embedding_backward(v.grad(0, 0), acts_[kDResidual], tokens_.inputs, BT, shape_.hidden);
  if (unit <= shape_.layers) return block_backward(unit - 1, v);
  head_backward(v);
}

// x -> residual2 = x + o(attn(rope(q, k), v)) over rms1 = rmsnorm(x); out = residual2 +
// down(silu(gate(rms2)) * up(rms2)) over rms2 = rmsnorm(residual2).
void Llama::block_forward(int l, const UnitViews& v, bool recompute) {
  const LlamaShape& s = shape_;
  const int T = s.seq_len, C = s.hidden, F = s.intermediate, KV = s.kv_channels(), BT = B_ * T, u = l + 1;
  const std::int64_t BTC = static_cast<std::int64_t>(BT) * C, BTF = static_cast<std::int64_t>(BT) * F;
  const std::int64_t att = static_cast<std::int64_t>(B_) * s.heads * T * T;
  auto p = [&](int i) { return v.param(u, i); };
  const int k = slot(l);
  const float* x = block_input(l);
  float* rms1 = acts_[kRms1] + k * BTC;
  float* qkv = acts_[kQkv] + k * 3 * BTC;
  float* atty = acts_[kAtty] + k * BTC;
  float* residual2 = acts_[kResidual2] + k * BTC;
  float* rms2 = acts_[kRms2] + k * BTC;
  float* gate = acts_[kGate] + k * BTF;
  float* up = acts_[kUp] + k * BTF;
  float* swiglu = acts_[kSwiglu] + k * BTF;
  lk_->rmsnorm_forward(rms1, acts_[kRstd1] + k * BT, x, p(kInputNorm), s.rms_norm_eps, BT, C);
  linear_forward(*k_, v, u, kWq, acts_[kQ], rms1, nullptr, BT, C, C);
  linear_forward(*k_, v, u, kWk, acts_[kK], rms1, nullptr, BT, C, KV);
  linear_forward(*k_, v, u, kWv, acts_[kV], rms1, nullptr, BT, C, KV);
  lk_->rope_pack_forward(qkv, acts_[kQ], acts_[kK], acts_[kV], acts_[kCos], acts_[kSin], BT, T, s.heads, s.kv_heads, s.head_dim());
  k_->attention_forward(atty, acts_[kPreatt], acts_[kAtt] + k * att, qkv, B_, T, C, s.heads);
  linear_forward(*k_, v, u, kWo, acts_[kTmp], atty, nullptr, BT, C, C);
  k_->residual_forward(residual2, x, acts_[kTmp], BTC);
  lk_->rmsnorm_forward(rms2, acts_[kRstd2] + k * BT, residual2, p(kPostNorm), s.rms_norm_eps, BT, C);
  linear_forward(*k_, v, u, kWGate, gate, rms2, nullptr, BT, C, F);
  linear_forward(*k_, v, u, kWUp, up, rms2, nullptr, BT, C, F);
  lk_->swiglu_forward(swiglu, gate, up, BTF);
  if (recompute) return;  // the output is the next block's kept input already
  linear_forward(*k_, v, u, kWDown, acts_[kTmp], swiglu, nullptr, BT, F, C);
  k_->residual_forward(acts_[kResidual3] + l * BTC, residual2, acts_[kTmp], BTC);
}

// Backward through a block. On entry kDResidual holds the gradient of the block's output; on
// exit, the gradient of its input. With checkpointing the block's forward runs again first, on
// its kept input, with the same kernels in the same order: the same internals, the same bits.
void Llama::block_backward(int l, const UnitViews& v) {
  const LlamaShape& s = shape_;
  const int T = s.seq_len, C = s.hidden, F = s.intermediate, BT = B_ * T, u = l + 1;
  const std::int64_t BTC = static_cast<std::int64_t>(BT) * C, BTF = static_cast<std::int64_t>(BT) * F;
  auto p = [&](int i) { return v.param(u, i); };
  auto g = [&](int i) { return v.grad(u, i); };
  const int k = slot(l);
  if (ckpt_.enabled) block_forward(l, v, /*recompute=*/true);
  float* dres = acts_[kDResidual];
  float* rms2 = acts_[kRms2] + k * BTC;
  // out = residual2 + down(swiglu): rms2's gradient is the sum of gate's and up's
  linear_backward(*k_, v, u, kWDown, acts_[kDSwiglu], g(kWDown), nullptr, dres, acts_[kSwiglu] + k * BTF, BT, F, C);
  lk_->swiglu_backward(acts_[kDGate], acts_[kDUp], acts_[kDSwiglu], acts_[kGate] + k * BTF, acts_[kUp] + k * BTF, BTF);
  linear_backward(*k_, v, u, kWGate, acts_[kDTmp], g(kWGate), nullptr, acts_[kDGate], rms2, BT, C, F);
  linear_backward(*k_, v, u, kWUp, acts_[kDTmp2], g(kWUp), nullptr, acts_[kDUp], rms2, BT, C, F);
  k_->residual_forward(acts_[kDTmp], acts_[kDTmp], acts_[kDTmp2], BTC);
  lk_->rmsnorm_backward(dres, g(kPostNorm), acts_[kDTmp], acts_[kResidual2] + k * BTC, p(kPostNorm), acts_[kRstd2] + k * BT,
                        BT, C);
  attention_backward(l, v);
}

// residual2 = x + o(attn(...)): on entry kDResidual holds residual2's gradient; adds x's.
void Llama::attention_backward(int l, const UnitViews& v) {
  const LlamaShape& s = shape_;
  const int T = s.seq_len, C = s.hidden, KV = s.kv_channels(), BT = B_ * T, u = l + 1;
  const std::int64_t BTC = static_cast<std::int64_t>(BT) * C, att = static_cast<std::int64_t>(B_) * s.heads * T * T;
  auto p = [&](int i) { return v.param(u, i); };
  auto g = [&](int i) { return v.grad(u, i); };
  const int k = slot(l);
  float* dres = acts_[kDResidual];
  float* rms1 = acts_[kRms1] + k * BTC;
  linear_backward(*k_, v, u, kWo, acts_[kDTmp], g(kWo), nullptr, dres, acts_[kAtty] + k * BTC, BT, C, C);
  k_->attention_backward(acts_[kDQkv], acts_[kDPreatt], acts_[kDAtt], acts_[kDTmp], acts_[kQkv] + k * 3 * BTC,
                         acts_[kAtt] + k * att, B_, T, C, s.heads);
  lk_->rope_pack_backward(acts_[kDQ], acts_[kDK], acts_[kDV], acts_[kDQkv], acts_[kCos], acts_[kSin], BT, T, s.heads,
                          s.kv_heads, s.head_dim());
  // rms1's gradient: the sum of q's, k's and v's, in that order
  linear_backward(*k_, v, u, kWq, acts_[kDTmp], g(kWq), nullptr, acts_[kDQ], rms1, BT, C, C);
  linear_backward(*k_, v, u, kWk, acts_[kDTmp2], g(kWk), nullptr, acts_[kDK], rms1, BT, C, KV);
  k_->residual_forward(acts_[kDTmp], acts_[kDTmp], acts_[kDTmp2], BTC);
  linear_backward(*k_, v, u, kWv, acts_[kDTmp2], g(kWv), nullptr, acts_[kDV], rms1, BT, C, KV);
  k_->residual_forward(acts_[kDTmp], acts_[kDTmp], acts_[kDTmp2], BTC);
  lk_->rmsnorm_backward(dres, g(kInputNorm), acts_[kDTmp], block_input(l), p(kInputNorm), acts_[kRstd1] + k * BT, BT, C);
}

// The LM head's weight: lm_head.weight, or the embedding's when tied.
void Llama::head_forward(const UnitViews& v) {
  const int C = shape_.hidden, V = shape_.vocab_size, BT = B_ * shape_.seq_len, u = shape_.layers + 1;
  const bool tied = shape_.tie_word_embeddings;
  lk_->rmsnorm_forward(acts_[kRmsf], acts_[kRstdf], block_input(shape_.layers), v.param(u, 0), shape_.rms_norm_eps, BT, C);
  linear_forward(*k_, v, tied ? 0 : u, tied ? 0 : 1, acts_[kLogits], acts_[kRmsf], nullptr, BT, C, V);
  loss_ = k_->softmax_crossentropy_forward(acts_[kProbs], acts_[kLosses], acts_[kLogits], tokens_.targets, BT, V);
}

void Llama::head_backward(const UnitViews& v) {
  const int C = shape_.hidden, V = shape_.vocab_size, BT = B_ * shape_.seq_len, u = shape_.layers + 1;
  const bool tied = shape_.tie_word_embeddings;
  float* dlogits = acts_[kLogits];  // the logits are not needed any more: reuse their memory
  k_->softmax_crossentropy_backward(dlogits, acts_[kProbs], tokens_.targets, BT, V);
  linear_backward(*k_, v, tied ? 0 : u, tied ? 0 : 1, acts_[kDRmsf], tied ? v.grad(0, 0) : v.grad(u, 1), nullptr, dlogits,
                  acts_[kRmsf], BT, C, V);
  k_->zero(acts_[kDResidual], static_cast<std::int64_t>(BT) * C);
  lk_->rmsnorm_backward(acts_[kDResidual], v.grad(u, 0), acts_[kDRmsf], block_input(shape_.layers), v.param(u, 0),
                        acts_[kRstdf], BT, C);
}

}  // namespace zero
