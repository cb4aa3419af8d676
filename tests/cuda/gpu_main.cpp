// main() of the GPU tests: where this process sees no CUDA device, it says so and exits 77,
// which CTest reports as skipped (SKIP_RETURN_CODE 77); anything else is GoogleTest's exit code.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "backends/cuda/cuda_device.h"

int main(int argc, char** argv) {
  std::string why;
  if (!zero::cuda_device_present(&why)) {
    std::printf("skipped: no CUDA device (%s)\n", why.c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
