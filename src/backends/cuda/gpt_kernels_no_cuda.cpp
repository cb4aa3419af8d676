// A build without CUDA: the GPT's cuda table exists only to say so.
#include "backends/cuda/cuda_backend.h"
#include "common/error.h"

namespace zero {

namespace {
constexpr const char* kNoCuda =
    "this build has no CUDA: rebuild with the CUDA toolkit and cuBLAS installed (cmake finds nvcc on the PATH or at "
    "/usr/local/cuda)";
}

std::unique_ptr<GptKernels> make_cuda_gpt_kernels(const GptCompute&) { throw ConfigError(cat("[model] device cuda: ", kNoCuda, "; or use --device cpu")); }

bool gpt_cuda_available(std::string* why) {
  if (why) *why = kNoCuda;
  return false;
}

}  // namespace zero
