#include "engine/collectives.h"

#include <algorithm>

namespace zero {
namespace {

// A bucket of B elements over N ranks is a piece of B / N elements per rank (at least one).
std::size_t per_rank(std::size_t bucket, int ranks) {
  if (bucket == 0) return 0;
  return std::max<std::size_t>(1, bucket / static_cast<std::size_t>(ranks));
}

}  // namespace

Collectives::Collectives(Communicator& comm, Device& device, std::size_t reduce_bucket, std::size_t gather_bucket)
    : comm_(comm), device_(device), reduce_segment_(per_rank(reduce_bucket, comm.size())),
      gather_segment_(per_rank(gather_bucket, comm.size())) {}

Handle Collectives::reduce_scatter(const DeviceSpan& send, const DeviceSpan& recv, const std::string& unit) {
  const CollectiveLabel label("unit " + unit);
  return comm_.reduce_scatter_async(device_.transport(send), device_.transport(recv), reduce_segment_);
}

Handle Collectives::all_gather(const DeviceSpan& send, const DeviceSpan& recv, const std::string& unit) {
  const CollectiveLabel label("unit " + unit);
  return comm_.all_gather_async(device_.transport(send), device_.transport(recv), gather_segment_);
}

Handle Collectives::all_reduce(const DeviceSpan& data, const std::string& unit) {
  const CollectiveLabel label("unit " + unit);
  return comm_.all_reduce_async(device_.transport(data), reduce_segment_);
}

}  // namespace zero
