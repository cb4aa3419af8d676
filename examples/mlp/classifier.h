// A small MLP classifier written against zero's public API only: a model zero does not ship.
//
// Three units, as zero shards and gathers them:
//   unit 0 "embed"   w_in (H, D), b_in (H)     h1 = tanh(w_in x + b_in)
//   unit 1 "hidden"  w_h (H, H),  b_h (H)      h2 = tanh(w_h h1 + b_h)
//   unit 2 "head"    b_out (D)                 logits = w_in^T h2 + b_out, borrowing unit 0's w_in
// so the head's weight is tied to the embedding's (as a language model ties its LM head to its
// token embedding): unit 2 declares no weight of its own and borrows unit 0, whose w_in the
// engine makes whole while the head runs and whose gradient collects both uses.
// The loss is the mean softmax cross-entropy over this rank's rows; D classes.
#pragma once

#include <cstdint>
#include <vector>

#include "zero/module.h"

namespace example {

struct Batch {
  int rows = 0;
  std::vector<float> x;             // (rows, D)
  std::vector<std::int32_t> label;  // (rows) in [0, D)
};

// Rows [first, first + rows) of global batch `step`: inputs uniform in [-1, 1) from a counter
// hash of (seed, step, row, column), so every rank draws exactly the rows one process would;
// the label is the index of the largest input.
Batch make_batch(int inputs, std::uint64_t seed, std::int64_t step, int first, int rows);

class Classifier final : public zero::Module {
 public:
  Classifier(int inputs, int hidden);

  void set_batch(Batch batch) { batch_ = std::move(batch); }

  std::vector<zero::UnitSpec> units() const override;
  void forward(int unit, const zero::UnitViews& views) override;
  void backward(int unit, const zero::UnitViews& views) override;
  float loss() const override { return loss_; }

 private:
  int D_, H_;
  Batch batch_;
  std::vector<float> h1_, h2_, probs_;  // (rows, H), (rows, H), (rows, D)
  std::vector<float> dh_;               // (rows, H) the gradient flowing back into h2, then h1
  float loss_ = 0.0f;
};

}  // namespace example
