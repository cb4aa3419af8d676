#include "model/llama_activations.h"

#include "zero/error.h"

namespace zero::llama {

std::vector<ActivationEntry> activation_plan(const LlamaShape& s, int B, const GptCheckpointing& ckpt, bool attention_scores) {
  if (ckpt.cpu) {
    throw ConfigError("[model] cpu_checkpointing is not implemented for model.type llama yet: turn cpu_checkpointing off "
                      "(activation checkpointing itself works)");
  }
  const std::int64_t L = s.layers, T = s.seq_len, C = s.hidden, V = s.vocab_size, NH = s.heads, F = s.intermediate;
  const std::int64_t KV = s.kv_channels(), BT = B * T, BTC = BT * C, BTF = BT * F, att = B * NH * T * T;
  const std::int64_t D = ckpt.enabled ? 1 : L;
  const std::int64_t scores = attention_scores ? att : 0;  // the scores' scratch: gpt_activations.cpp
  std::vector<ActivationEntry> n(kNumActs);
  n[kEmbedded].numel = BTC;
  n[kRms1].numel = D * BTC, n[kRstd1].numel = D * BT, n[kQkv].numel = D * 3 * BTC, n[kAtty].numel = D * BTC;
  n[kAtt].numel = D * att;
  n[kResidual2].numel = D * BTC, n[kRms2].numel = D * BTC, n[kRstd2].numel = D * BT;
  n[kGate].numel = D * BTF, n[kUp].numel = D * BTF, n[kSwiglu].numel = D * BTF;
  n[kResidual3].numel = L * BTC;
  n[kQ].numel = BTC, n[kK].numel = BT * KV, n[kV].numel = BT * KV, n[kPreatt].numel = scores, n[kTmp].numel = BTC;
  n[kCos].numel = T * s.head_dim() / 2, n[kSin].numel = T * s.head_dim() / 2;
  n[kRmsf].numel = BTC, n[kRstdf].numel = BT, n[kLogits].numel = BT * V, n[kProbs].numel = BT * V, n[kLosses].numel = BT;
  n[kDResidual].numel = BTC, n[kDTmp].numel = BTC, n[kDTmp2].numel = BTC;
  n[kDSwiglu].numel = BTF, n[kDGate].numel = BTF, n[kDUp].numel = BTF;
  n[kDQkv].numel = 3 * BTC, n[kDQ].numel = BTC, n[kDK].numel = BT * KV, n[kDV].numel = BT * KV;
  n[kDPreatt].numel = scores, n[kDAtt].numel = att, n[kDRmsf].numel = BTC;
  return n;
}

ActivationBytes activation_plan_bytes(const LlamaShape& shape, int micro_batch, const GptCheckpointing& ckpt,
                                      bool attention_scores) {
  ActivationBytes bytes;
  for (const ActivationEntry& e : activation_plan(shape, micro_batch, ckpt, attention_scores)) {
    (e.tier == Tier::kHost ? bytes.host : bytes.device) += static_cast<std::uint64_t>(e.numel) * sizeof(float);
  }
  return bytes;
}

}  // namespace zero::llama
