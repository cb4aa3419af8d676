// The flat layout: all shard arithmetic lives here and nowhere else.
//
// Words used throughout zero:
//   unit    a group of parameters sharded and gathered together (see spec.h).
//   flat    a unit's parameters laid end to end, then zero padding so the length divides by N.
//   slice   the r-th 1/N of a unit's flat buffer; rank r owns slice r of every unit.
//   shard   a rank's slices of all units, concatenated in unit order.
//   segment a run of one parameter (or of padding) inside a unit or a slice, with its facts.
// All unit buffers of the model laid one after another form the model's full flat buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "zero/spec.h"

namespace zero {

struct ParamPlace {
  ParamSpec spec;
  std::size_t offset = 0;  // first element within the unit's flat buffer
  std::size_t numel = 0;
};

struct UnitPlace {
  std::string name;
  std::vector<ParamPlace> params;
  std::vector<int> borrows;
  std::size_t numel = 0;         // parameters, without padding
  std::size_t padded = 0;        // numel rounded up to a multiple of the world size
  std::size_t slice = 0;         // padded / shard size: each rank's part (the world size unless hybrid)
  std::size_t flat_offset = 0;   // start of this unit in the model's full flat buffer
  std::size_t shard_offset = 0;  // start of this unit's slice in every rank's shard
};

struct Segment {
  std::size_t offset = 0;        // relative to the start of the unit or slice it was asked for
  std::size_t numel = 0;
  int param = -1;                // index in the unit's params; -1 for padding
  std::size_t param_offset = 0;  // element of the parameter at `offset`
  bool decay = false;
};

class FlatLayout {
 public:
  // Throws ConfigError for a unit without parameters, an empty or duplicate parameter name, a
  // non-positive dimension, a borrow that names no unit, or a world size below 1.
  // `shard_size` (hybrid sharding, DeepSpeed's mics_shard_size): the units are sharded among
  // groups of that many ranks instead of among all of them, and rank r of a group owns the r-th
  // 1/shard_size of every unit; 0 = the world size. It must divide the world size. The padding
  // stays a multiple of the world size, so that a slice divides again among the world/shard_size
  // groups: the replicas' all-reduce of a slice is a reduce-scatter over them, then an all-gather.
  FlatLayout(std::vector<UnitSpec> units, int world_size, int shard_size = 0);

  int world_size() const { return world_size_; }  // ranks whose gradients are summed
  int shard_size() const { return shard_size_; }  // ranks that share one copy of the state: slices per unit
  int num_units() const { return static_cast<int>(units_.size()); }
  const UnitPlace& unit(int u) const { return units_.at(u); }

  std::size_t numel() const { return numel_; }               // Ψ: all parameters, no padding
  std::size_t padded_numel() const { return padded_numel_; } // length of the full flat buffer
  std::size_t shard_numel() const { return padded_numel_ / shard_size_; }
  std::size_t largest_unit() const;                          // padded elements of the largest unit

  // Where rank r's slice of unit u starts inside the whole unit: the one place that says so.
  // r is the rank within its shard group (hybrid sharding), which is the rank otherwise.
  std::size_t slice_offset(int u, int rank) const { return static_cast<std::size_t>(rank) * unit(u).slice; }
  // The segments of rank r's slice of unit u, offsets relative to the slice's start.
  std::vector<Segment> slice_segments(int u, int rank) const;
  // The segments of all of unit u, offsets relative to the unit's start.
  std::vector<Segment> unit_segments(int u) const;

  // Units u reads while it runs: itself and its borrows.
  std::vector<int> units_read_by(int u) const;
  // Backward runs units last to first; the gradient of unit u is complete once the last of its
  // readers in that order has run: the smallest index among u and the units that borrow it.
  int gradient_ready_after(int u) const { return grad_ready_after_.at(u); }

  // A hash of every name, shape and unit boundary (not of the world size): ranks that disagree
  // on the model have different fingerprints.
  std::uint64_t fingerprint() const { return fingerprint_; }

 private:
  std::vector<Segment> segments_in(int u, std::size_t begin, std::size_t end) const;

  int world_size_;
  int shard_size_;
  std::vector<UnitPlace> units_;
  std::vector<int> grad_ready_after_;
  std::size_t numel_ = 0;
  std::size_t padded_numel_ = 0;
  std::uint64_t fingerprint_ = 0;
};

}  // namespace zero
