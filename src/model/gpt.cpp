#include "model/gpt.h"

#include <algorithm>

#include "zero/backend_facts.h"
#include "zero/error.h"
#include "model/batch_tokens.h"
#include "model/linear_layer.h"

namespace zero {
namespace {

using namespace gpt;  // the Act indices (gpt_activations.h)

// Parameter indices inside a block unit, in gpt_shape.cpp's order.
enum BlockParam : int { kLn1W, kLn1B, kWQkv, kBQkv, kWAttProj, kBAttProj, kLn2W, kLn2B, kWFc, kBFc, kWMlpProj, kBMlpProj };

}  // namespace

ActivationBytes Gpt::activation_bytes(const GptShape& shape, int micro_batch, const GptCheckpointing& checkpointing,
                                     const GptCompute& compute) {
  return activation_plan_bytes(shape, micro_batch, checkpointing, find_facts(compute.device, "[model]").attention_scores);
}

Gpt::Gpt(const GptShape& shape, int micro_batch, Ledger& ledger, const GptCheckpointing& checkpointing,
         const GptCompute& compute)
    : shape_(shape), B_(micro_batch), ckpt_(checkpointing), k_(make_gpt_kernels(compute)) {
  shape_.validate();
  if (micro_batch <= 0) throw ConfigError(cat("[model] the micro-batch must be at least 1 sequence, not ", micro_batch));
  for (const ActivationEntry& e : activation_plan(shape_, B_, ckpt_, find_facts(compute.device, "[model]").attention_scores)) {
    buffers_.push_back(e.numel == 0 ? nullptr : k_->alloc(ledger, e.tier, static_cast<std::size_t>(e.numel), "GPT activations"));
    acts_.push_back(buffers_.back().get());
  }
  inputs_.assign(static_cast<std::size_t>(B_) * shape_.seq_len, 0);
  targets_ = inputs_;
  tokens_ = k_->upload_tokens(inputs_.data(), targets_.data(), inputs_.size());
}

void Gpt::set_batch(const std::int32_t* inputs, const std::int32_t* targets) {
  const std::size_t n = inputs_.size();
  check_batch_tokens(inputs, targets, n, shape_.vocab_size);
  std::copy(inputs, inputs + n, inputs_.begin());
  std::copy(targets, targets + n, targets_.begin());
  tokens_ = k_->upload_tokens(inputs_.data(), targets_.data(), n);
}

const float* Gpt::probs(int b, int t) const {
  const float* row = acts_[kProbs] + (static_cast<std::int64_t>(b) * shape_.seq_len + t) * shape_.vocab_size;
  if (k_->host_addressable()) return row;
  probs_row_.resize(static_cast<std::size_t>(shape_.vocab_size));
  k_->read(probs_row_.data(), row, shape_.vocab_size);
  return probs_row_.data();
}

const float* Gpt::block_input(int l) const {
  const std::int64_t BTC = static_cast<std::int64_t>(B_) * shape_.seq_len * shape_.channels;
  if (ckpt_.cpu) return acts_[kEncoded];  // staged from the host (stage_block_input)
  return l == 0 ? acts_[kEncoded] : acts_[kResidual3] + (l - 1) * BTC;
}

// The blocks' four weight matrices, read only by their linear layers' products.
bool Gpt::reads_bf16(int unit, int index) const {
  const bool block = unit >= 1 && unit <= shape_.layers;
  return block && k_->takes_bf16_weights() && (index == kWQkv || index == kWAttProj || index == kWFc || index == kWMlpProj);
}

void Gpt::forward(int unit, const UnitViews& v) {
  k_->set_stream(v.stream());
  if (unit == 0) return embedding_forward(v);
  if (unit <= shape_.layers) return block_forward(unit - 1, v);
  head_forward(v);
}

void Gpt::backward(int unit, const UnitViews& v) {
  k_->set_stream(v.stream());
  if (unit == 0) return embedding_backward(v);
  if (unit <= shape_.layers) return block_backward(unit - 1, v);
  head_backward(v);
}

void Gpt::embedding_forward(const UnitViews& v) {
  k_->encoder_forward(acts_[kEncoded], tokens_.inputs, v.param(0, 0), v.param(0, 1), B_, shape_.seq_len, shape_.channels);
  keep_block_input(0, acts_[kEncoded]);
}

void Gpt::embedding_backward(const UnitViews& v) {
  k_->encoder_backward(v.grad(0, 0), v.grad(0, 1), acts_[kDResidual], tokens_.inputs, B_, shape_.seq_len, shape_.channels);
}

void Gpt::block_forward(int l, const UnitViews& v, bool recompute) {
  const int T = shape_.seq_len, C = shape_.channels, NH = shape_.heads, BT = B_ * T, u = l + 1;
  const std::int64_t BTC = static_cast<std::int64_t>(BT) * C, att = static_cast<std::int64_t>(B_) * NH * T * T;
  auto p = [&](int i) { return v.param(u, i); };
  const int k = slot(l);
  stage_block_input(l);
  float* ln1 = acts_[kLn1] + k * BTC;
  float* qkv = acts_[kQkv] + k * 3 * BTC;
  float* atty = acts_[kAtty] + k * BTC;
  float* attproj = acts_[kAttproj] + k * BTC;
  float* residual2 = acts_[kResidual2] + k * BTC;
  float* ln2 = acts_[kLn2] + k * BTC;
  float* fch = acts_[kFch] + k * 4 * BTC;
  float* fch_gelu = acts_[kFchGelu] + k * 4 * BTC;
  float* fcproj = acts_[kFcproj] + k * BTC;
  const float* x = block_input(l);
  k_->layernorm_forward(ln1, acts_[kLn1Mean] + k * BT, acts_[kLn1Rstd] + k * BT, x, p(kLn1W), p(kLn1B), BT, C);
  linear_forward(*k_, v, u, kWQkv, qkv, ln1, p(kBQkv), BT, C, 3 * C);
  k_->attention_forward(atty, acts_[kPreatt], acts_[kAtt] + k * att, qkv, B_, T, C, NH);
  k_->matmul_residual_forward(residual2, attproj, x, atty, linear_weight(*k_, v, u, kWAttProj), p(kBAttProj), BT, C, C);
  k_->layernorm_forward(ln2, acts_[kLn2Mean] + k * BT, acts_[kLn2Rstd] + k * BT, residual2, p(kLn2W), p(kLn2B), BT, C);
  k_->matmul_gelu_forward(fch, fch_gelu, ln2, linear_weight(*k_, v, u, kWFc), p(kBFc), BT, C, 4 * C);
  // Recomputing, the block's output is the next block's kept input already: its last product (the
  // MLP's projection), which only that output reads, is skipped.
  if (recompute) return;
  float* out = acts_[kResidual3] + (ckpt_.cpu ? 0 : l) * BTC;
  k_->matmul_residual_forward(out, fcproj, residual2, fch_gelu, linear_weight(*k_, v, u, kWMlpProj), p(kBMlpProj), BT, 4 * C, C);
  keep_block_input(l + 1, out);
}

// Backward through a block. On entry kDResidual holds the gradient of the block's output; on
// exit, the gradient of its input (the residual stream carries it from block to block).
void Gpt::block_backward(int l, const UnitViews& v) {
  const int T = shape_.seq_len, C = shape_.channels, NH = shape_.heads, BT = B_ * T, u = l + 1;
  const std::int64_t BTC = static_cast<std::int64_t>(BT) * C, att = static_cast<std::int64_t>(B_) * NH * T * T;
  auto p = [&](int i) { return v.param(u, i); };
  auto g = [&](int i) { return v.grad(u, i); };
  const int k = slot(l);
  if (ckpt_.enabled) recompute_block(l, v);
  float* dres = acts_[kDResidual];
  float* dtmp = acts_[kDTmp];
  // residual3 = residual2 + mlp(ln2(residual2))
  linear_backward(*k_, v, u, kWMlpProj, acts_[kDFchGelu], g(kWMlpProj), g(kBMlpProj), dres, acts_[kFchGelu] + k * 4 * BTC, BT, 4 * C, C);
  k_->gelu_matmul_backward(dtmp, g(kWFc), g(kBFc), acts_[kDFch], acts_[kFch] + k * 4 * BTC, acts_[kDFchGelu], acts_[kLn2] + k * BTC,
                           linear_weight(*k_, v, u, kWFc), BT, C, 4 * C);
  k_->layernorm_backward(dres, g(kLn2W), g(kLn2B), dtmp, acts_[kResidual2] + k * BTC, p(kLn2W), acts_[kLn2Mean] + k * BT,
                          acts_[kLn2Rstd] + k * BT, BT, C);
  // residual2 = x + attn(ln1(x))
  linear_backward(*k_, v, u, kWAttProj, dtmp, g(kWAttProj), g(kBAttProj), dres, acts_[kAtty] + k * BTC, BT, C, C);
  k_->attention_backward(acts_[kDQkv], acts_[kDPreatt], acts_[kDAtt], dtmp, acts_[kQkv] + k * 3 * BTC, acts_[kAtt] + k * att,
                          B_, T, C, NH);
  linear_backward(*k_, v, u, kWQkv, dtmp, g(kWQkv), g(kBQkv), acts_[kDQkv], acts_[kLn1] + k * BTC, BT, C, 3 * C);
  k_->layernorm_backward(dres, g(kLn1W), g(kLn1B), dtmp, block_input(l), p(kLn1W), acts_[kLn1Mean] + k * BT,
                          acts_[kLn1Rstd] + k * BT, BT, C);
}

void Gpt::head_forward(const UnitViews& v) {
  const int T = shape_.seq_len, C = shape_.channels, V = shape_.vocab_size, BT = B_ * T, u = shape_.layers + 1;
  stage_block_input(shape_.layers);
  k_->layernorm_forward(acts_[kLnf], acts_[kLnfMean], acts_[kLnfRstd], block_input(shape_.layers), v.param(u, 0),
                         v.param(u, 1), BT, C);
  linear_forward(*k_, v, 0, 0, acts_[kLogits], acts_[kLnf], nullptr, BT, C, V);  // tied: logits = lnf wte^T
  loss_ = k_->softmax_crossentropy_forward(acts_[kProbs], acts_[kLosses], acts_[kLogits], tokens_.targets, BT, V);
}

void Gpt::head_backward(const UnitViews& v) {
  const int T = shape_.seq_len, C = shape_.channels, V = shape_.vocab_size, BT = B_ * T, u = shape_.layers + 1;
  stage_block_input(shape_.layers);
  float* dlogits = acts_[kLogits];  // the logits are not needed any more: reuse their memory
  k_->softmax_crossentropy_backward(dlogits, acts_[kProbs], tokens_.targets, BT, V);
  linear_backward(*k_, v, 0, 0, acts_[kDLnf], v.grad(0, 0), nullptr, dlogits, acts_[kLnf], BT, C, V);
  k_->zero(acts_[kDResidual], static_cast<std::int64_t>(BT) * C);
  k_->layernorm_backward(acts_[kDResidual], v.grad(u, 0), v.grad(u, 1), acts_[kDLnf], block_input(shape_.layers),
                          v.param(u, 0), acts_[kLnfMean], acts_[kLnfRstd], BT, C);
}

}  // namespace zero
