// The CPU Adam/AdamW step: SIMD, multi-threaded, bit-identical to adam_reference.
//
// ZeRO-Offload runs the optimizer on the host, so this step is on the critical path of every
// offloaded training step. It is memory-bound: per parameter it reads p, g, m, v and writes
// p, m, v back in place (28 bytes), plus 2 bytes when it also writes a bf16/fp16 copy of the
// updated parameters for the device. The kernel's arithmetic is hidden behind that traffic.
//
// Exactness. Each vector width (scalar, AVX2, AVX-512) runs one kernel body (cpu_adam_body.h)
// that performs adam_reference's operations in the same order — fma exactly where it uses fma,
// IEEE sqrt and division — on a small vector type. Elements are independent, so the result is
// bit-identical to adam_reference for any length, alignment, tile size and thread count.
//
// NaN and Inf. As in the reference, a NaN or Inf gradient propagates by IEEE arithmetic: a NaN
// gradient makes that element's m, v and p NaN; an Inf gradient makes m and v Inf and p NaN
// (Inf/Inf). Nothing is detected here: loss scaling checks gradients upstream. Every element
// whose reference result is not NaN matches bit for bit; where the reference gives NaN the kernel
// gives NaN too, though when two different NaNs meet, which payload survives is left open by IEEE.
//
// Spans must not overlap one another; all but the optional copy must have the same length.
// Calls on disjoint spans may run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "common/half.h"
#include "optim/adamw.h"

namespace zero {

// The instruction sets the kernel is built for. kAuto picks the best this CPU supports.
enum class CpuIsa : std::uint8_t { kAuto, kScalar, kAvx2, kAvx512 };

const char* cpu_isa_name(CpuIsa isa);       // "auto", "scalar", "avx2", "avx512"
CpuIsa cpu_isa_parse(std::string_view name);  // the inverse; ConfigError on an unknown name
bool cpu_isa_supported(CpuIsa isa);         // built into this binary and runnable on this CPU
CpuIsa adam_isa_active();                   // what kAuto resolves to on this CPU

struct AdamOptions {
  // (n) bf16 or fp16 bits of the updated parameters, written in the same pass (round to nearest
  // even, see common/half.h). Empty: no copy. On runs of 2^20 elements or more the copy is
  // written with streaming stores (it is written, never read, so this saves reading its lines
  // first), fenced before the call returns; the copy then starts out of cache.
  std::span<std::uint16_t> copy = {};
  HalfFormat copy_format = HalfFormat::kBf16;
  int threads = 0;              // OpenMP threads; 0: omp_get_max_threads(). Runs shorter than one
                                // tile stay on the calling thread. Callers that are themselves
                                // one of several threads (thread ranks) should pass 1.
  CpuIsa isa = CpuIsa::kAuto;   // force a kernel (tests, benchmarks); ConfigError if unsupported
  std::size_t tile = 0;         // elements per tile handed to a thread; 0: the default. Tests
                                // shrink it so small inputs reach the multi-tile paths.
};

// One Adam/AdamW step over one run of elements, with step scalars from adam_step_scalars.
// `decay` says whether weight decay applies to these elements. Throws ConfigError for
// mismatched lengths, a null span with a non-zero length, overlapping spans, a negative thread
// count or an ISA this CPU cannot run.
void adam_step(const AdamStep& s, bool decay, std::span<float> p, std::span<const float> g, std::span<float> m,
               std::span<float> v, const AdamOptions& opts = {});

// For benchmarks: a loop with exactly adam_step's memory traffic and none of its arithmetic.
// It reads p, g, m, v and writes p, m, v back in place (p += g, m += g, v += g), and writes the
// copy if one is given, with the same tiles, threads, vector width and stores as adam_step.
// Its speed is the ceiling adam_step is measured against.
void adam_traffic_ceiling(std::span<float> p, std::span<const float> g, std::span<float> m, std::span<float> v,
                          const AdamOptions& opts = {});

}  // namespace zero
