// For the GPU tests of the GPT: the main that reports CTest's skip where there is no GPU, tensors
// held by a kernel table (host vectors in, host vectors out), and the per-tensor comparison.
//
// The tests use only the kernel-table interface, so they build everywhere; where the build has
// no CUDA or the process sees no GPU, main prints "skipped: no CUDA device" and exits with
// kSkipCode, which tests/CMakeLists.txt registers as SKIP_RETURN_CODE (any other non-zero exit
// is a failure, so a crash is never a skip).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/gpt_kernel_table.h"
#include "partition/init.h"

namespace zero::test {

inline constexpr int kSkipCode = 77;

inline std::vector<float> random_vector(std::size_t n, std::uint64_t key, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((counter_uniform(key, i) * 2 - 1) * scale);
  return v;
}

// A tensor in a table's memory (device tier), filled from and read into host vectors.
class TableTensor {
 public:
  TableTensor(GptKernels& k, Ledger& ledger, const std::vector<float>& host)
      : k_(&k), n_(host.size()), mem_(k.alloc(ledger, Tier::kDevice, std::max<std::size_t>(host.size(), 1), "test tensor")) {
    if (n_ > 0) k.copy(mem_.get(), host.data(), static_cast<std::int64_t>(n_));
  }
  float* get() const { return mem_.get(); }
  std::vector<float> host() const {
    std::vector<float> out(n_);
    if (n_ > 0) k_->read(out.data(), mem_.get(), static_cast<std::int64_t>(n_));
    return out;
  }

 private:
  GptKernels* k_;
  std::size_t n_;
  ModelMemory mem_;
};

// max |got - ref| over max |ref|: a tensor's error relative to its own scale (elements near zero
// would make an element-wise relative error meaningless).
inline double normalized_error(const std::vector<float>& got, const std::vector<float>& ref) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - ref[i]));
    scale = std::max(scale, std::abs(static_cast<double>(ref[i])));
  }
  if (std::isnan(diff) || got.size() != ref.size()) return INFINITY;
  return scale > 0 ? diff / scale : diff;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The test programs' main: skip (kSkipCode) without a GPU, else run every test.
inline int run_gpu_tests(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string why;
  if (!gpt_cuda_available(&why)) {
    std::printf("skipped: no CUDA device: %s\n", why.c_str());
    return kSkipCode;
  }
  return RUN_ALL_TESTS();
}

}  // namespace zero::test
