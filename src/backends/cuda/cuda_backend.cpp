// The cuda backend: GPU memory and CUDA kernels (cuda_device.cpp, cuda_ops.cu, cuda_sum.cu,
// cuda_adam.cu), the GPT's CUDA table (gpt_cuda_table.cpp, gpt_cuda_kernels.cu) and the nccl
// communicator (nccl_comm.cpp). Compiled in every build: without CUDA its constructors are the
// stubs that say so (no_cuda.cpp, gpt_kernels_no_cuda.cpp), and available() says why.
#include "backends/cuda/cuda_backend.h"

#include "backends/registry.h"

namespace zero {

BackendFacts cuda_facts();  // cuda_facts.cpp

namespace {
// gpt_cuda_table.cpp: bf16 operands for the layers' products, attention's in f32.
std::string describe_cuda_matmul(Dtype operands) {
  return operands == Dtype::kBf16 ? "bf16 matrix products (cuBLAS; attention's f32)" : "f32 matrix products (cuBLAS)";
}
}  // namespace

Backend cuda_backend() {
  Backend b;
  b.facts = cuda_facts();
  b.make_device = make_cuda_device;
  b.make_gpt_kernels = make_cuda_gpt_kernels;
  b.describe_matmul = describe_cuda_matmul;
  b.communicator = "nccl";
  b.make_communicator = detail::make_nccl_communicator;
  b.available = gpt_cuda_available;
  return b;
}

}  // namespace zero
