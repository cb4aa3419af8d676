// How zero's GPT maps onto Hugging Face's GPT-2 (transformers' GPT2LMHeadModel) tensor names and
// layouts, for export. zero's linear weights are (out, in), as in PyTorch's nn.Linear; GPT-2's
// are Conv1D weights, (in, out): those are transposed. The LM head is tied to wte in both, so
// there is no lm_head tensor.
#pragma once

#include <string>

namespace zero {

struct HfTensor {
  std::string name;        // e.g. "transformer.h.0.attn.c_attn.weight"
  bool transpose = false;  // a 2-D weight stored transposed (Conv1D)
};

// The GPT-2 tensor of one of zero's GPT parameters ("h.0.attn.w_qkv"); ConfigError for a name
// that is not one of them.
HfTensor gpt2_tensor(const std::string& zero_name);

}  // namespace zero
