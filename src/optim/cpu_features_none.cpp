// Builds without the x86 kernels (other architectures): only the scalar kernel exists.
// src/CMakeLists.txt picks this file instead of cpu_adam_avx2/avx512.cpp and cpu_features_x86.cpp.
#include "optim/cpu_adam_body.h"

namespace zero::cpu_adam {

const KernelTable* kernels_avx2() { return nullptr; }
const KernelTable* kernels_avx512() { return nullptr; }
bool cpu_runs_avx2() { return false; }
bool cpu_runs_avx512() { return false; }

}  // namespace zero::cpu_adam
