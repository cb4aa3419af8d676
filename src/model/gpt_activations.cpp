#include "model/gpt_activations.h"

#include "zero/error.h"

namespace zero::gpt {

std::vector<ActivationEntry> activation_plan(const GptShape& s, int B, const GptCheckpointing& ckpt, bool attention_scores) {
  if (ckpt.cpu && !ckpt.enabled) {
    throw ConfigError("[model] cpu_checkpointing moves the kept block inputs to the host: it needs activation "
                      "checkpointing on (--activation-checkpointing or the activation_checkpointing section)");
  }
  const std::int64_t L = s.layers, T = s.seq_len, C = s.channels, V = s.vocab_size, NH = s.heads;
  const std::int64_t BT = B * T, BTC = BT * C, att = B * NH * T * T;
  const std::int64_t D = ckpt.enabled ? 1 : L;  // layers of block internals held at once
  std::vector<ActivationEntry> n(kNumActs);
  n[kEncoded].numel = BTC;
  n[kLn1].numel = D * BTC, n[kLn1Mean].numel = D * BT, n[kLn1Rstd].numel = D * BT, n[kQkv].numel = D * 3 * BTC;
  // preatt: the scores' scratch, one layer's, where the device's kernels use it (BackendFacts).
  const std::int64_t scores = attention_scores ? att : 0;
  n[kAtty].numel = D * BTC, n[kPreatt].numel = scores, n[kAtt].numel = D * att;
  n[kAttproj].numel = D * BTC, n[kResidual2].numel = D * BTC, n[kLn2].numel = D * BTC;
  n[kLn2Mean].numel = D * BT, n[kLn2Rstd].numel = D * BT;
  n[kFch].numel = D * 4 * BTC, n[kFchGelu].numel = D * 4 * BTC, n[kFcproj].numel = D * BTC;
  n[kResidual3].numel = (ckpt.cpu ? 1 : L) * BTC;
  n[kLnf].numel = BTC, n[kLnfMean].numel = BT, n[kLnfRstd].numel = BT;
  n[kLogits].numel = BT * V, n[kProbs].numel = BT * V, n[kLosses].numel = BT;
  n[kDResidual].numel = BTC, n[kDTmp].numel = BTC, n[kDFchGelu].numel = 4 * BTC, n[kDFch].numel = 4 * BTC;
  n[kDQkv].numel = 3 * BTC, n[kDPreatt].numel = scores, n[kDAtt].numel = att, n[kDLnf].numel = BTC;
  n[kKept] = {ckpt.cpu ? (L + 1) * BTC : 0, Tier::kHost};
  return n;
}

ActivationBytes activation_plan_bytes(const GptShape& shape, int micro_batch, const GptCheckpointing& ckpt, bool attention_scores) {
  ActivationBytes bytes;
  for (const ActivationEntry& e : activation_plan(shape, micro_batch, ckpt, attention_scores)) {
    (e.tier == Tier::kHost ? bytes.host : bytes.device) += static_cast<std::uint64_t>(e.numel) * sizeof(float);
  }
  return bytes;
}

}  // namespace zero::gpt
