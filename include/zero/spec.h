// What a model declares about its parameters. The engine owns their memory; the model only
// describes them: name, shape, initialisation and whether weight decay applies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zero {

enum class InitKind { kZeros, kOnes, kNormal, kUniform };

struct Init {
  InitKind kind = InitKind::kZeros;
  float scale = 0.0f;  // normal: standard deviation; uniform: bound b of U(-b, b)
  static Init zeros() { return {InitKind::kZeros, 0.0f}; }
  static Init ones() { return {InitKind::kOnes, 0.0f}; }
  static Init normal(float std) { return {InitKind::kNormal, std}; }
  static Init uniform(float bound) { return {InitKind::kUniform, bound}; }
};

struct ParamSpec {
  std::string name;                 // unique in the model, e.g. "h.3.attn.w_qkv"
  std::vector<std::int64_t> shape;  // row-major
  Init init;
  bool decay = true;                // AdamW weight decay applies (false for biases, norms)
  std::int64_t numel() const;
};

// A unit: the granularity of sharding and of stage 3's gathers (an embedding, a block, a head).
struct UnitSpec {
  std::string name;
  std::vector<ParamSpec> params;
  // Other units whose parameters this unit reads in forward and backward (a tied weight is
  // owned by one unit and borrowed by another). They are made whole while this unit runs.
  std::vector<int> borrows;
};

}  // namespace zero
