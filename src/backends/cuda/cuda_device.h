// The "cuda" device (cuda_device.cpp): engine memory in GPU memory, operations as CUDA kernels.
// What CUDA code outside the device (a model's kernels) needs from it.
//
// Streams: the compute stream issues each operation to its CUDA stream from the calling thread
// and returns (the GPU runs it later, in issue order); the copy and host streams each have a
// thread of their own that issues to a CUDA stream of their own, so a copy overlaps compute.
// record() is an event: its wait() returns when the GPU has run everything issued before it.
// A stream waiting on an event blocks that stream's issuing thread until the event completes.
//
// Which GPU: ZERO_CUDA_DEVICE if set, else the MPI local rank (OMPI_COMM_WORLD_LOCAL_RANK)
// modulo the number of GPUs, else 0; several ranks may share one GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "device/device.h"

namespace zero {

// The CUDA stream behind one of a cuda device's streams (ZERO_CHECK: it is one).
cudaStream_t cuda_stream(Stream& s);

// A cuda device's kernel memory: device addresses, and the compute stream to issue to.
class CudaKernelMemory : public KernelMemory {
 public:
  virtual cudaStream_t stream() const = 0;
};

// True if this process sees a CUDA device; otherwise false with the reason in *why.
bool cuda_device_present(std::string* why);

// The GPU this process uses (the policy above); ConfigError if there is none.
int cuda_device_ordinal();

// Internal to the cuda device's files: its streams on GPU `ordinal`.
std::unique_ptr<Stream> make_cuda_compute_stream(int ordinal);
std::unique_ptr<Stream> make_cuda_thread_stream(int ordinal);

}  // namespace zero
