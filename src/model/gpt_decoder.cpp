#include "model/gpt_decoder.h"

#include <algorithm>

#include "backends/cpu/gpt_kernels.h"
#include "common/error.h"

namespace zero {

GptDecoder::GptDecoder(const GptShape& shape, std::vector<float> weights)
    : Decoder(shape.units(), std::move(weights), {shape.vocab_size, shape.seq_len, shape.layers, shape.channels, shape.heads},
              cat("GPT ", shape.describe())),
      shape_(shape) {
  const std::size_t C = shape_.channels;
  x_.assign(C, 0.0f), a_.assign(C, 0.0f), qkv_.assign(3 * C, 0.0f), y_.assign(C, 0.0f), h_.assign(4 * C, 0.0f);
  tmp_.assign(4 * C, 0.0f);
}

// One position through every layer: x = wte[token] + wpe[pos], then the blocks, each reading
// the cached keys and values of the positions before it.
void GptDecoder::step(int token) {
  const int C = shape_.channels, t = position();
  float mean, rstd;
  for (int c = 0; c < C; ++c) x_[c] = param(0, 0)[token * C + c] + param(0, 1)[t * C + c];
  for (int l = 0; l < shape_.layers; ++l) {
    const int u = l + 1;
    gpt::layernorm_forward(a_.data(), &mean, &rstd, x_.data(), param(u, 0), param(u, 1), 1, C);
    gpt::matmul_forward(matmul(), qkv_.data(), a_.data(), param(u, 2), param(u, 3), 1, C, 3 * C);
    std::copy(qkv_.begin() + C, qkv_.begin() + 2 * C, key(l));
    std::copy(qkv_.begin() + 2 * C, qkv_.end(), value(l));
    attend(l, qkv_.data(), y_.data());
    gpt::matmul_forward(matmul(), tmp_.data(), y_.data(), param(u, 4), param(u, 5), 1, C, C);
    gpt::residual_forward(x_.data(), x_.data(), tmp_.data(), C);
    gpt::layernorm_forward(a_.data(), &mean, &rstd, x_.data(), param(u, 6), param(u, 7), 1, C);
    gpt::matmul_forward(matmul(), h_.data(), a_.data(), param(u, 8), param(u, 9), 1, C, 4 * C);
    gpt::gelu_forward(tmp_.data(), h_.data(), 4 * C);
    gpt::matmul_forward(matmul(), h_.data(), tmp_.data(), param(u, 10), param(u, 11), 1, 4 * C, C);
    gpt::residual_forward(x_.data(), x_.data(), h_.data(), C);
  }
  const int head = shape_.layers + 1;
  gpt::layernorm_forward(a_.data(), &mean, &rstd, x_.data(), param(head, 0), param(head, 1), 1, C);
  gpt::matmul_forward(matmul(), logits_.data(), a_.data(), param(0, 0), nullptr, 1, C, shape_.vocab_size);  // tied to wte
}

}  // namespace zero
