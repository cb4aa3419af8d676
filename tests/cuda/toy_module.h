// A tiny model for the engine's GPU tests, with a CUDA and a CPU build of the same arithmetic:
// unit u holds one weight vector w_u; the loss is sum_u sum_i (w_u[i] - t_u[i])^2 / 2 against
// fixed targets t (different on each rank), so backward adds w - t into the gradient. On the
// GPU each unit's backward is a kernel on device memory, launched on the legacy stream (which
// the cuda device's blocking streams are ordered with); the loss is summed on the host, in order.
#pragma once

#include <memory>
#include <vector>

#include "engine/module.h"

namespace zero::testing {

class ToyModule : public Module {
 public:
  ToyModule(bool gpu, int rank, std::vector<std::size_t> sizes);
  ~ToyModule() override;
  std::vector<UnitSpec> units() const override;
  void forward(int unit, const UnitViews& views) override;
  void backward(int unit, const UnitViews& views) override;
  float loss() const override { return loss_; }

 private:
  bool gpu_;
  std::vector<std::size_t> sizes_;
  std::vector<std::vector<float>> targets_;  // host
  std::vector<float*> device_targets_;       // gpu only
  double sum_ = 0;
  float loss_ = 0;
};

}  // namespace zero::testing
