// CUDA and cuBLAS status codes as errors, for the GPT's CUDA files. (The cuda device has its own
// in device/; the lead may merge the two.)
#pragma once

#include <cuda_runtime_api.h>

#include "common/error.h"

namespace zero::gpt::cuda {

// Throws zero::Error "[model] CUDA error while <what>: <reason>" unless `status` is success.
inline void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error(cat("[model] CUDA error while ", what, ": ", cudaGetErrorString(status)));
}

// After a kernel launch: a bad configuration shows here, a fault on a later synchronisation.
inline void launch_check(const char* kernel) { cuda_check(cudaGetLastError(), kernel); }

}  // namespace zero::gpt::cuda
