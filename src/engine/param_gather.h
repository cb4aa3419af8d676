// Stage 3's all-gathers of a unit's parameters, plain or with ZeRO++'s two options
// (docs/zeropp.md; DeepSpeed's zero_quantized_weights and zero_hpz_partition_size):
//
//   plain  every gather: each rank's slice of P/N elements, compute dtype, from every rank.
//   qwZ    every gather that reads the primary slices (the forward's, and the backward's when hpZ
//          is off, as DeepSpeed quantises every fetch) sends the slice as int8 blocks with one
//          f32 scale each (engine/quantize.h) and dequantises the whole unit on arrival, this
//          rank's own slice included, so every rank computes with the same values. The slices
//          themselves (the optimizer's masters) are never quantised.
//   hpZ    the secondary partition: when a forward gather has arrived, this rank keeps its 1/H of
//          the whole unit (the values the forward used: dequantised under qwZ), partitioned among
//          the H ranks of its hpZ group, which lie inside its node. A backward gather reads those
//          (compute dtype, not quantised again), so it never leaves the node. The partition is
//          persistent memory, category parameters (it is a second copy of them), P/H elements.
//
// The secondary partition holds the values of the last forward; the optimizer's step makes it
// stale (parameters_changed) until the next forward gathers again.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/stage.h"

namespace zero {

// Whether stage 3 keeps unit u whole for the run (stage3_param_persistence_threshold): such a
// unit is gathered once after each step, exactly, never through ParameterGather.
bool persists_whole(const StageContext& ctx, int u);

class ParameterGather {
 public:
  explicit ParameterGather(const StageContext& ctx);
  ParameterGather(const ParameterGather&) = delete;
  ParameterGather& operator=(const ParameterGather&) = delete;

  // Whether the gather for a use in the backward pass reads the secondary partition (not this
  // rank's primary slice).
  bool from_secondary(bool backward) const { return backward && ctx_.secondary != nullptr && !exact_; }
  // Starts filling `whole` (unit u, padded, compute dtype, device) for its next use; `source` is
  // this rank's primary slice of it (on the device), read unless from_secondary(backward).
  Handle start(int u, const DeviceSpan& source, const DeviceSpan& whole, bool backward);
  // The gather start(u, ...) issued has completed (its handle was waited for): under hpZ, a
  // forward gather leaves this rank's part of `whole` in the secondary partition.
  void arrived(int u, const DeviceSpan& whole);
  // The optimizer is about to change the parameters: the secondary partition goes stale.
  void parameters_changed();
  // While on, every gather is plain (exact, from the primary slices) and leaves the secondary
  // partition as it is: reads of the weights themselves (Stage::begin_exact_reads).
  void set_exact(bool on) { exact_ = on; }

 private:
  Handle quantized(const DeviceSpan& source, const DeviceSpan& whole, const std::string& unit);
  DeviceSpan secondary_part(int u) const;

  StageContext ctx_;
  DeviceBuffer secondary_;                      // (sum of padded / H over gathered units) compute dtype, device: hpZ
  std::vector<std::size_t> secondary_offset_;   // (num_units) where unit u's part starts in it
  std::vector<char> pending_;                   // (num_units) a forward gather whose part is still to be kept
  std::vector<char> valid_;                     // (num_units) the part holds this step's forward values
  bool exact_ = false;                          // set_exact
};

}  // namespace zero
