// A build without CUDA (cmake/cuda.cmake turned ZERO_CUDA off): the cuda device and the nccl
// communicator exist only to say so.
#include "backends/cuda/cuda_backend.h"
#include "common/error.h"

namespace zero {

namespace {
const char* kHow = "rebuild with the CUDA toolkit, cuBLAS and NCCL installed (cmake finds nvcc on the PATH or at /usr/local/cuda)";
}

std::unique_ptr<Device> make_cuda_device(Ledger&) {
  throw ConfigError(cat("[device] this build has no CUDA: ", kHow, ", or use --device cpu"));
}

namespace detail {
std::unique_ptr<Communicator> make_nccl_communicator(CommOptions) {
  throw ConfigError(cat("[comm] this build has no CUDA, so no nccl backend: ", kHow, ", or use --comm mpi"));
}
}  // namespace detail

}  // namespace zero
