// The cuda backend's constructors, for its registration (cuda_backend.cpp). Each is defined by the
// CUDA file named, or, in a build without CUDA, by no_cuda.cpp / gpt_kernels_no_cuda.cpp, which
// say so at run time.
#pragma once

#include <memory>
#include <string>

#include "backends/gpt_kernel_table.h"
#include "comm/communicator.h"
#include "device/device.h"

namespace zero {

std::unique_ptr<Device> make_cuda_device(Ledger& ledger);  // cuda_device.cpp
// The GPT's CUDA table (gpt_cuda_table.cpp); ConfigError if no GPU is visible.
std::unique_ptr<GptKernels> make_cuda_gpt_kernels(const GptCompute& compute);
// True if this build has the CUDA table and this process sees a GPU; otherwise false with the
// reason in *why (for tests that skip, and for checks made before any work starts).
bool gpt_cuda_available(std::string* why);

namespace detail {
// The nccl communicator (nccl_comm.cpp): one rank per GPU process, bootstrapped over MPI.
std::unique_ptr<Communicator> make_nccl_communicator(CommOptions options);
}  // namespace detail

}  // namespace zero
