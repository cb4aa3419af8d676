// The module interface: how a model plugs into the engine.
//
// A model is a list of units (see spec.h). It declares their parameters and computes;
// the engine owns every parameter and gradient byte and hands the model *views* of the units a
// step needs, whole, for as long as it needs them. In stage 3 the other units are not whole at
// that moment, so a model that reads a unit it did not declare (as itself or a borrow) gets an
// error instead of stale memory.
#pragma once

#include <cstdint>
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
  // The same parameter as the engine holds it in a bf16 run (bf16 values), or null: an f32 or
  // fp16 unit, or a device whose kernels read f32 only. Where Module::reads_bf16 says true, a
  // bf16 run's engine leaves that parameter's param() unwritten: read it through this one.
  const std::uint16_t* param_bf16(int unit, int index) const;

  // The device's native stream this call's kernels issue to (a cudaStream_t on a cuda device;
  // null where kernels run on the calling thread): KernelMemory::stream_handle().
  void* stream() const { return stream_; }

  // For the engine: unit u's whole flat buffers (grads may be null in forward), and the stream.
  void set(int unit, const float* params, float* grads, const std::uint16_t* params_bf16 = nullptr);
  void set_stream(void* stream) { stream_ = stream; }

 private:
  const FlatLayout* layout_;
  std::vector<const float*> params_;  // (num_units) start of each resident unit, or null
  std::vector<float*> grads_;         // (num_units)
  std::vector<const std::uint16_t*> params_bf16_;  // (num_units) a bf16 run's own parameters, or null
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

  // True where the model reads parameter `index` of unit `unit` only through
  // UnitViews::param_bf16 whenever a view gives it (its matrix products take bf16 operands as they
  // are), so that a bf16 run need not widen it into f32 for the kernels.
  virtual bool reads_bf16(int /*unit*/, int /*index*/) const { return false; }

  // The mean loss over this rank's micro-batch, valid after the last unit's forward.
  virtual float loss() const = 0;
};

}  // namespace zero
