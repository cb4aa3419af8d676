#include "engine/collectives.h"

#include <algorithm>

#include "common/error.h"

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

// The element type travels with the spans: 16-bit spans make 16-bit collectives (half the bytes
// on the wire, each element summed in f32 in rank order and rounded once).
Handle Collectives::reduce_scatter(const DeviceSpan& send, const DeviceSpan& recv) {
  ZERO_CHECK(send.dtype() == recv.dtype() && send.size() == recv.size() * static_cast<std::size_t>(size()),
             "reduce_scatter of ", send.size(), " ", dtype_label(send.dtype()), " into ", recv.size(), " ", dtype_label(recv.dtype()));
  return comm_.reduce_scatter_async(device_.transport(send), device_.transport(recv), recv.size(), recv.dtype(), reduce_segment_);
}

Handle Collectives::all_gather(const DeviceSpan& send, const DeviceSpan& recv) {
  ZERO_CHECK(send.dtype() == recv.dtype() && recv.size() == send.size() * static_cast<std::size_t>(size()),
             "all_gather of ", send.size(), " ", dtype_label(send.dtype()), " into ", recv.size(), " ", dtype_label(recv.dtype()));
  return comm_.all_gather_async(device_.transport(send), device_.transport(recv), send.size(), send.dtype(), gather_segment_);
}

Handle Collectives::all_reduce(const DeviceSpan& data) {
  return comm_.all_reduce_async(device_.transport(data), data.size(), data.dtype(), reduce_segment_);
}

}  // namespace zero
