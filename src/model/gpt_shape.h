// The shape of a GPT-2-style decoder and the units it is sharded in. Shared by the model, the
// planner and the CLI, so that all three count the same parameters.
//
// Units (the granularity of sharding and of stage 3's gathers), in forward order:
//   0        "embedding"  wte (V, C), wpe (T, C)
//   1 .. L   "h.<l>"      ln1.w, ln1.b (C); attn.w_qkv (3C, C), attn.b_qkv (3C);
//                         attn.w_proj (C, C), attn.b_proj (C); ln2.w, ln2.b (C);
//                         mlp.w_fc (4C, C), mlp.b_fc (4C); mlp.w_proj (C, 4C), mlp.b_proj (C)
//   L + 1    "head"       lnf.w, lnf.b (C); borrows unit 0: the LM head is wte, tied
// Weight decay applies to matrices and embeddings, not to biases and LayerNorm parameters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zero/spec.h"

namespace zero {

struct GptShape {
  int vocab_size = 256;  // V
  int seq_len = 64;      // T, the context length
  int channels = 128;    // C
  int layers = 4;        // L
  int heads = 4;         // H; C must divide by H

  // Throws ConfigError naming the bad field.
  void validate() const;
  std::int64_t num_parameters() const;           // V*C + T*C + L*(12C^2 + 13C) + 2C
  std::vector<UnitSpec> units() const;           // as listed above
  std::string describe() const;                  // "V=256 T=64 C=128 L=4 H=4"
};

}  // namespace zero
