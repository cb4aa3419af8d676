// ZERO_VECTOR_CLONES: a hot loop compiled for AVX-512, AVX2 and the baseline, the loader picking
// one for this CPU (GCC function multi-versioning). Only for loops whose clones give the same bits:
// integer work, or float operations done one IEEE operation at a time (no contraction:
// -ffp-contract=off, no reassociation). Non-x86 builds get the baseline alone.
// (Not under ThreadSanitizer: the clones' resolver runs before the sanitizer's runtime starts.)
#pragma once

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define ZERO_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ZERO_VECTOR_CLONES
#endif
