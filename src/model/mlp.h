// A small multi-layer perceptron, the engine's test model: one unit per layer, tanh between
// layers, squared error against a target. With `tied`, the output layer reuses the first
// layer's weight transposed (an autoencoder's tied decoder), so the output unit borrows unit 0:
// the case of GPT's tied embedding, in miniature.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/module.h"

namespace zero {

struct MlpShape {
  std::vector<int> widths{13, 31, 29, 7};  // input, hidden..., output
  bool tied = false;  // output weight = first weight transposed (needs widths.front() == back(), widths[1] == widths[n-2])
};

// A micro-batch: rows of inputs and targets.
struct MlpBatch {
  int rows = 0;
  std::vector<float> x;  // (rows, widths.front())
  std::vector<float> y;  // (rows, widths.back())
};

// Rows [first, first + rows) of global batch number `step` of a synthetic regression task:
// inputs uniform in [-1, 1), targets a fixed smooth function of them. Counter-based, so a rank
// drawing its slice gets exactly the rows a single process would draw for the whole batch.
MlpBatch mlp_synthetic_batch(const MlpShape& shape, std::uint64_t seed, std::int64_t step, int first, int rows);

class Mlp final : public Module {
 public:
  explicit Mlp(MlpShape shape);

  void set_batch(MlpBatch batch);

  std::vector<UnitSpec> units() const override;
  void forward(int unit, const UnitViews& views) override;
  void backward(int unit, const UnitViews& views) override;
  float loss() const override { return loss_; }

 private:
  int layers() const { return static_cast<int>(shape_.widths.size()) - 1; }
  // Layer l's weight (out, in) and where it lives: unit l parameter 0, or unit 0's transposed.
  bool weight_is_tied(int l) const { return shape_.tied && l == layers() - 1; }

  MlpShape shape_;
  MlpBatch batch_;
  std::vector<std::vector<float>> acts_;  // (layers + 1) of (rows, width): acts_[0] = x, acts_[l+1] = layer l's output
  std::vector<float> delta_;              // (rows, width) gradient flowing backward
  float loss_ = 0.0f;
};

}  // namespace zero
