// Which of the x86 kernels this CPU runs. __builtin_cpu_supports also checks that the operating
// system saves the wider registers. Compiled without ISA flags: it runs everywhere.
#include "optim/cpu_adam_body.h"

namespace zero::cpu_adam {

bool cpu_runs_avx2() {
  __builtin_cpu_init();  // idempotent; safe even before libgcc's constructor has run
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

bool cpu_runs_avx512() { return cpu_runs_avx2() && __builtin_cpu_supports("avx512f"); }

}  // namespace zero::cpu_adam
