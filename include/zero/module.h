// The module interface: how a model plugs into the engine.
//
// A model is a list of units (see spec.h). It declares their parameters and computes;
// the engine owns every parameter and gradient byte and hands the model *views* of the units a
// step needs, whole, for as long as it needs them. In stage 3 the other units are not whole at
// that moment, so a model that reads a unit it did not declare (as itself or a borrow) gets an
// error instead of stale memory.
#pragma once

#include <vector>

#include "zero/layout.h"

namespace zero {

class UnitViews {
 public:
  explicit UnitViews(const FlatLayout& layout);

  // Parameter `index` of unit `unit`, whole: (numel of that parameter) f32.
  const float* param(int unit, int index) const;
  // Its gradient accumulator; backward adds into it. Only in backward.
  float* grad(int unit, int index) const;

  // The device's native stream this call's kernels issue to (a cudaStream_t on a cuda device;
  // null where kernels run on the calling thread): KernelMemory::stream_handle().
  void* stream() const { return stream_; }

  // For the engine: unit u's whole flat buffers (grads may be null in forward), and the stream.
  void set(int unit, const float* params, float* grads);
  void set_stream(void* stream) { stream_ = stream; }

 private:
  const FlatLayout* layout_;
  std::vector<const float*> params_;  // (num_units) start of each resident unit, or null
  std::vector<float*> grads_;         // (num_units)
  void* stream_ = nullptr;
};

class Module {
 public:
  virtual ~Module() = default;

  // The units, in forward order. Called once, when the engine is built.
  virtual std::vector<UnitSpec> units() const = 0;

  // Runs unit `unit` forward on this rank's micro-batch; the last unit also computes the loss.
  virtual void forward(int unit, const UnitViews& views) = 0;
  // Runs unit `unit` backward (units are called last to first), adding into the gradients.
  virtual void backward(int unit, const UnitViews& views) = 0;

  // The mean loss over this rank's micro-batch, valid after the last unit's forward.
  virtual float loss() const = 0;
};

}  // namespace zero
