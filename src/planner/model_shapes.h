// What the planner plans for: a model described as its units (the engine's granularity of
// sharding and gathering), from a GPT shape, a LLaMA shape (model/llama_shape.h: the units the
// LLaMA model builds), bare counts, or a name.
//
// The planner lays these units out with the engine's own FlatLayout, so padding, slices and the
// tied head's extra gathers come out exactly as the engine will have them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/gpt_shape.h"
#include "model/llama_shape.h"  // the LLaMA zero trains: the same units, names and sizes
#include "partition/spec.h"

namespace zero {

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
