// Internal to the engine: the collectives the stages issue, on engine memory. Every collective
// of the engine goes through here, so this is the one place where device spans become what the
// transport reads (Device::transport), and where bucket sizes bound each collective's pieces.
#pragma once

#include "comm/communicator.h"
#include "device/device.h"

namespace zero {

class Collectives {
 public:
  // Buckets in elements of all ranks together (DeepSpeed's meaning); 0: unbounded.
  Collectives(Communicator& comm, Device& device, std::size_t reduce_bucket, std::size_t gather_bucket);

  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  Communicator& communicator() { return comm_; }

  // As Communicator's (communicator.h): send N*k -> recv k (rank order sum), send k -> recv N*k,
  // data N*k summed everywhere. recv of reduce_scatter may be this rank's slot of send. `unit`
  // (the unit's name) labels the collective for the order check (comm/order_check.h), so ranks
  // that diverge are told at which unit.
  Handle reduce_scatter(const DeviceSpan& send, const DeviceSpan& recv, const std::string& unit);
  Handle all_gather(const DeviceSpan& send, const DeviceSpan& recv, const std::string& unit);
  Handle all_reduce(const DeviceSpan& data, const std::string& unit);

 private:
  Communicator& comm_;
  Device& device_;
  std::size_t reduce_segment_;  // elements per rank per piece of a reduction (0: the transport's limit)
  std::size_t gather_segment_;  // of a gather
};

}  // namespace zero
