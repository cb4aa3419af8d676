#include "model/llama_decoder.h"

#include <algorithm>

#include "backends/cpu/gpt_kernels.h"
#include "backends/cpu/llama_kernels.h"
#include "common/error.h"

namespace zero {
namespace {

// Parameter indices inside a block unit, in llama_shape.cpp's order.
enum BlockParam : int { kInputNorm, kWq, kWk, kWv, kWo, kPostNorm, kWGate, kWUp, kWDown };

}  // namespace

LlamaDecoder::LlamaDecoder(const LlamaShape& shape, std::vector<float> weights)
    : Decoder(shape.units(), std::move(weights), {shape.vocab_size, shape.seq_len, shape.layers, shape.hidden, shape.heads},
              cat("LLaMA ", shape.describe())),
      shape_(shape) {
  const std::size_t C = shape_.hidden, KV = shape_.kv_channels(), F = shape_.intermediate;
  cos_.assign(static_cast<std::size_t>(shape_.seq_len) * shape_.head_dim() / 2, 0.0f);
  sin_ = cos_;
  shape_.rope_table(cos_.data(), sin_.data());
  x_.assign(C, 0.0f), a_.assign(C, 0.0f), q_.assign(C, 0.0f), k_.assign(KV, 0.0f), v_.assign(KV, 0.0f), qkv_.assign(3 * C, 0.0f);
  y_.assign(C, 0.0f), tmp_.assign(C, 0.0f), gate_.assign(F, 0.0f), up_.assign(F, 0.0f), act_.assign(F, 0.0f);
}

// One position through every layer with the training forward's kernels (llama.cpp), each block
// reading the cached keys and values of the positions before it.
void LlamaDecoder::step(int token) {
  const LlamaShape& s = shape_;
  const int C = s.hidden, F = s.intermediate, KV = s.kv_channels(), hd = s.head_dim(), t = position();
  float rstd;
  std::copy_n(param(0, 0) + static_cast<std::size_t>(token) * C, C, x_.begin());
  for (int l = 0; l < s.layers; ++l) {
    const int u = l + 1;
    llama::rmsnorm_forward(a_.data(), &rstd, x_.data(), param(u, kInputNorm), s.rms_norm_eps, 1, C);
    gpt::matmul_forward(matmul(), q_.data(), a_.data(), param(u, kWq), nullptr, 1, C, C);
    gpt::matmul_forward(matmul(), k_.data(), a_.data(), param(u, kWk), nullptr, 1, C, KV);
    gpt::matmul_forward(matmul(), v_.data(), a_.data(), param(u, kWv), nullptr, 1, C, KV);
    // One row at position t: the table's row t, given as a table of one position.
    const std::size_t row = static_cast<std::size_t>(t) * (hd / 2);
    llama::rope_pack_forward(qkv_.data(), q_.data(), k_.data(), v_.data(), cos_.data() + row, sin_.data() + row, 1, 1, s.heads, s.kv_heads, hd);
    std::copy(qkv_.begin() + C, qkv_.begin() + 2 * C, key(l));
    std::copy(qkv_.begin() + 2 * C, qkv_.end(), value(l));
    attend(l, qkv_.data(), y_.data());
    gpt::matmul_forward(matmul(), tmp_.data(), y_.data(), param(u, kWo), nullptr, 1, C, C);
    gpt::residual_forward(x_.data(), x_.data(), tmp_.data(), C);
    llama::rmsnorm_forward(a_.data(), &rstd, x_.data(), param(u, kPostNorm), s.rms_norm_eps, 1, C);
    gpt::matmul_forward(matmul(), gate_.data(), a_.data(), param(u, kWGate), nullptr, 1, C, F);
    gpt::matmul_forward(matmul(), up_.data(), a_.data(), param(u, kWUp), nullptr, 1, C, F);
    llama::swiglu_forward(act_.data(), gate_.data(), up_.data(), F);
    gpt::matmul_forward(matmul(), tmp_.data(), act_.data(), param(u, kWDown), nullptr, 1, F, C);
    gpt::residual_forward(x_.data(), x_.data(), tmp_.data(), C);
  }
  const int head = s.layers + 1;
  llama::rmsnorm_forward(a_.data(), &rstd, x_.data(), param(head, 0), s.rms_norm_eps, 1, C);
  const float* lm_head = s.tie_word_embeddings ? param(0, 0) : param(head, 1);
  gpt::matmul_forward(matmul(), logits_.data(), a_.data(), lm_head, nullptr, 1, C, s.vocab_size);
}

}  // namespace zero
