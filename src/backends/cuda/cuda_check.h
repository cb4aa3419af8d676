// Internal to the CUDA files: a failed CUDA, cuBLAS or NCCL call becomes a zero::Error naming
// what was being done and the library's own message.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "common/error.h"

namespace zero {

inline void cuda_check(cudaError_t rc, const std::string& what) {
  if (rc != cudaSuccess) throw Error(cat("[cuda] ", what, " failed: ", cudaGetErrorString(rc)));
}

// After a kernel launch: the launch's own error (bad configuration), not the kernel's outcome.
inline void cuda_check_launch(const char* kernel) { cuda_check(cudaGetLastError(), cat("launching ", kernel)); }

}  // namespace zero
