// Which OpenBLAS kernel set this CPU should use, where OpenBLAS's own choice fell short.
//
// OpenBLAS picks its kernels once, when the library loads (before main), from the CPU's model
// number. A CPU newer than the library falls back to "Prescott", its SSE3 kernels: Debian 12's
// OpenBLAS 0.3.21 does so on Intel's Emerald Rapids (family 6, model 207), where the GPT's GEMMs
// then take 4.4-4.9x the time of the AVX-512 kernels (bench/README.md). The kernel set can only be
// changed by OPENBLAS_CORETYPE before the library loads, so the CLI starts itself again with it
// (cli/main.cpp); a program linking libzero sets OPENBLAS_CORETYPE itself.
#pragma once

#include <string>

namespace zero {

// "SkylakeX" on a CPU with AVX-512 F/BW/DQ/VL, else "Haswell" with AVX2 and FMA, where OpenBLAS
// fell back to "Prescott" on its own; empty where OpenBLAS chose anything else, where the user
// set OPENBLAS_CORETYPE (their choice stands, Prescott included), or where the CPU has neither.
std::string blas_core_to_choose();

// The kernel set OpenBLAS is running with ("SkylakeX", "Haswell", "Prescott", ...).
std::string blas_core_in_use();

}  // namespace zero
