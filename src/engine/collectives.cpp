#include "engine/collectives.h"

namespace zero {

Handle Collectives::reduce_scatter(const DeviceSpan& send, const DeviceSpan& recv) {
  return comm_.reduce_scatter_async(device_.transport(send), device_.transport(recv));
}

Handle Collectives::all_gather(const DeviceSpan& send, const DeviceSpan& recv) {
  return comm_.all_gather_async(device_.transport(send), device_.transport(recv));
}

Handle Collectives::all_reduce(const DeviceSpan& data) { return comm_.all_reduce_async(device_.transport(data)); }

}  // namespace zero
