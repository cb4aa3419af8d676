// Collectives on device memory the communicator cannot read: staged through host memory (see
// Collectives::through_host). This is how several processes share one GPU over the mpi backend
// (NCCL cannot put two ranks on one GPU): the cuda device's transport addresses are GPU memory,
// which Open MPI (built without CUDA) cannot read, so the collective runs on host copies. The
// bits are the mpi backend's: it sums the same numbers in the same rank order.
#include <future>
#include <memory>

#include "engine/collectives.h"

namespace zero {

bool Collectives::staged() const {
  return device_.computes() && !device_.transport_is_host() && !comm_.reads_device_memory();
}

Handle Collectives::through_host(const DeviceSpan& send, const DeviceSpan& recv, const std::function<Handle(void*, void*)>& issue) {
  auto host_send = std::make_shared<DeviceBuffer>(
      device_.alloc(Tier::kHost, Category::kCommBuffers, send.size(), "host staging of a collective", send.dtype(), false));
  auto host_recv = host_send;  // an all_reduce: in place
  if (!recv.same_as(send)) {
    host_recv = std::make_shared<DeviceBuffer>(
        device_.alloc(Tier::kHost, Category::kCommBuffers, recv.size(), "host staging of a collective", recv.dtype(), false));
  }
  device_.copy(device_.compute(), host_send->span(), send);
  void* s = device_.transport(host_send->span());  // waits for the copy
  Handle h = issue(s, device_.transport(host_recv->span()));
  Device& device = device_;
  const DeviceSpan dst = recv;
  return Handle(std::async(std::launch::deferred, [h, host_send, host_recv, &device, dst] {
    h.wait();
    device.copy(device.compute(), dst, host_recv->span());
    device.compute().synchronize();  // before the host copies go
  }).share());
}

}  // namespace zero
