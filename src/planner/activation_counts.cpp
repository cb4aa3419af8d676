#include "planner/activation_counts.h"

#include "common/error.h"

namespace zero {

ActivationBytes llama_activation_bytes(const LlamaShape& s, int B, const GptCheckpointing& ckpt, int element_bytes) {
  if (ckpt.cpu && !ckpt.enabled) {
    throw ConfigError("[planner] cpu checkpointing moves the kept block inputs to the host: it needs activation checkpointing on");
  }
  const std::int64_t L = s.layers, T = s.seq_len, C = s.hidden, V = s.vocab_size, H = s.heads, F = s.intermediate;
  const std::int64_t kv = static_cast<std::int64_t>(s.kv_heads) * C / H, BT = B * T, BTC = BT * C;
  // One block's forward tensors (the list in activation_counts.h).
  const std::int64_t block = BTC + BT + BT * (C + 2 * kv) + BTC + B * H * T + BTC + BTC + BTC + BT + 3 * BT * F + BTC + BTC;
  const std::int64_t block_output = BTC;  // the residual leaving the block: the next block's input
  const std::int64_t head = BTC + BT + 2 * BT * V + BT;
  const std::int64_t scratch = 2 * BTC + BT * (C + 2 * kv) + 3 * BT * F + BTC;
  const std::int64_t embedding = BTC;
  ActivationBytes out;
  std::int64_t device = embedding + head + scratch, host = 0;
  if (!ckpt.enabled) {
    device += L * block;
  } else if (!ckpt.cpu) {
    device += L * block_output + (block - block_output);  // kept outputs (= inputs) + one block's internals
  } else {
    device += block;                      // one block's tensors, its output included (copied to the host)
    host = (L + 1) * BTC;                 // kept inputs: every block's and the head's
  }
  out.device = static_cast<std::uint64_t>(device) * element_bytes;
  out.host = static_cast<std::uint64_t>(host) * element_bytes;
  return out;
}

}  // namespace zero
