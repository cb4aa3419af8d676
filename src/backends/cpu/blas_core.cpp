#include "backends/cpu/blas_core.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>

namespace zero {

std::string blas_core_in_use() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

std::string blas_core_to_choose() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return "";
  if (std::strcmp(blas_core_in_use().c_str(), "Prescott") != 0) return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

}  // namespace zero
