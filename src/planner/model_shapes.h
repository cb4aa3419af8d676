// What the planner plans for: a model described as its units (the engine's granularity of
// sharding and gathering), from a GPT shape, a LLaMA-style shape, bare counts, or a name.
//
// The planner lays these units out with the engine's own FlatLayout, so padding, slices and the
// tied head's extra gathers come out exactly as the engine will have them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/gpt_shape.h"
#include "partition/spec.h"

namespace zero {

// A LLaMA-style decoder (LLaMA 1/2/3). Its block differs from GPT-2's, so it gets its own count:
// RMSNorm (a weight, no bias) before attention and before the MLP; attention projections q, o
// (C, C) and k, v (kv_heads * C / heads, C), grouped-query when kv_heads < heads; a SwiGLU MLP
// w1, w3 (F, C) and w2 (C, F); no biases anywhere; no learned position embedding (RoPE); a final
// RMSNorm and an output head (V, C) that is NOT tied to the token embedding.
// Units, in forward order: "embedding" (V, C); "h.<l>" one per block; "head" = final norm + output.
struct LlamaShape {
  int vocab_size = 32000;  // V
  int seq_len = 4096;      // T, the context length (no parameters depend on it)
  int channels = 4096;     // C
  int layers = 32;         // L
  int heads = 32;          // H
  int kv_heads = 32;       // key/value heads; < heads is grouped-query attention
  int ffn_hidden = 11008;  // F, the SwiGLU hidden width

  void validate() const;  // ConfigError naming the bad field
  std::int64_t num_parameters() const;  // 2*V*C + L*(2*C*C + 2*C*kv + 3*C*F + 2*C) + C, kv = kv_heads*C/heads
  std::vector<UnitSpec> units() const;
  std::string describe() const;  // "V=32000 T=4096 C=4096 L=32 H=32 KV=32 F=11008"
};

struct ModelDescription {
  std::string name;    // "gpt2-xl", "llama2-7b", or "custom"
  std::string family;  // "gpt2" (GptShape), "llama" (LlamaShape), "counts" (a parameter count)
  std::string detail;  // the shape or the counts, for output
  std::string source;  // for named shapes: whose published dimensions these are
  std::vector<UnitSpec> units;   // forward order, with borrows (the GPT head borrows the embedding)
  std::optional<GptShape> gpt;   // set for family "gpt2": the activation hook reads it
  std::optional<LlamaShape> llama;  // set for family "llama": planner/activation_counts.h reads it

  std::int64_t num_parameters() const;
  std::int64_t largest_unit() const;  // parameters of the largest unit, unpadded
};

ModelDescription describe_gpt(const GptShape& shape, const std::string& name = "custom");
ModelDescription describe_llama(const LlamaShape& shape, const std::string& name = "custom");

// A model known only by its parameter count Ψ and its largest unit (the most any one gather or
// reduction makes whole). It is laid out as ceil(Ψ / largest) units: one of `largest_unit`
// parameters and the rest split evenly (so the second largest is close to the largest, as in a
// stack of equal blocks). ConfigError for a count or a unit that is zero or negative, or a
// largest unit above the count.
ModelDescription describe_counts(std::int64_t parameters, std::int64_t largest_unit);

// The named shapes, with public dimensions. ConfigError for an unknown name, listing the known.
ModelDescription named_model(const std::string& name);
std::vector<std::string> named_model_names();

}  // namespace zero
