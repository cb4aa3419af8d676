// Internal to optim: the one body of the CPU Adam kernel, written once over a small vector type.
//
// A vector type V gives a register type V::Reg of V::kWidth floats and the operations the body
// needs (load, store, set1, add, mul, div, sqrt, fma), the conversions to bf16/fp16 into a
// V::HalfReg of kWidth halves, and their stores: plain, or streaming where kCanStream. Each ISA's file
// (cpu_adam_avx2.cpp, cpu_adam_avx512.cpp) defines its type, compiled with that ISA's flags, and
// builds its KernelTable from the templates below; cpu_adam.cpp builds the scalar one. The tail
// of every tile runs the same body with VecScalar, width 1.
//
// Everything here has internal linkage (the unnamed namespace): each ISA's file gets its own
// copy compiled with its own flags, so the linker can never hand AVX-512 code to a scalar caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/half.h"
#include "optim/adamw.h"

namespace zero::cpu_adam {

enum class Decay : int { kNone, kL2, kDecoupled };  // which weight decay applies to this run
enum class Copy : int { kNone, kBf16, kFp16 };      // which 16-bit copy of p is written, if any

// One tile: n elements from the given pointers, on the calling thread. `stream`: write the copy
// with streaming stores where possible (see run_lanes).
using AdamTileFn = void (*)(const AdamStep& s, float* p, const float* g, float* m, float* v, std::uint16_t* copy,
                            std::size_t n, bool stream);
using CeilingTileFn = void (*)(float* p, const float* g, float* m, float* v, std::uint16_t* copy, std::size_t n,
                               bool stream);

struct KernelTable {
  std::size_t width;         // floats per vector register
  AdamTileFn adam[3][3];     // [Decay][Copy]
  CeilingTileFn ceiling[3];  // [Copy]
};

// The tables built into this binary; nullptr where an ISA is not (e.g. AVX on a non-x86 build).
const KernelTable* kernels_scalar();
const KernelTable* kernels_avx2();
const KernelTable* kernels_avx512();
bool cpu_runs_avx2();    // AVX2 + FMA + F16C, with OS support
bool cpu_runs_avx512();  // AVX-512F and all of the above

namespace {

// The width-1 vector type: plain floats. __builtin_fmaf/__builtin_sqrtf are IEEE fma and sqrt,
// as std::fma/std::sqrt in adam_reference (compiled to one instruction where the ISA has it).
struct VecScalar {
  using Reg = float;
  static constexpr std::size_t kWidth = 1;
  static Reg load(const float* x) { return *x; }
  static void store(float* x, Reg a) { *x = a; }
  static Reg set1(float a) { return a; }
  static Reg add(Reg a, Reg b) { return a + b; }
  static Reg mul(Reg a, Reg b) { return a * b; }
  static Reg div(Reg a, Reg b) { return a / b; }
  static Reg sqrt(Reg a) { return __builtin_sqrtf(a); }
  static Reg fma(Reg a, Reg b, Reg c) { return __builtin_fmaf(a, b, c); }
  using HalfReg = std::uint16_t;
  static HalfReg to_bf16(Reg a) { return float_to_bf16(a); }
  static HalfReg to_fp16(Reg a) { return float_to_fp16(a); }
  static void store_half(std::uint16_t* out, HalfReg h) { *out = h; }
  static constexpr bool kCanStream = false;
  static void stream_half(std::uint16_t* out, HalfReg h) { *out = h; }
  static void fence() {}
};

// The step's scalars broadcast once per tile.
template <class V>
struct Broadcast {
  using R = typename V::Reg;
  R weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2, inv_sqrt_bc2, eps, decay_factor, neg_step_size;
  explicit Broadcast(const AdamStep& s)
      : weight_decay(V::set1(s.weight_decay)),
        beta1(V::set1(s.beta1)),
        one_minus_beta1(V::set1(s.one_minus_beta1)),
        beta2(V::set1(s.beta2)),
        one_minus_beta2(V::set1(s.one_minus_beta2)),
        inv_sqrt_bc2(V::set1(s.inv_sqrt_bc2)),
        eps(V::set1(s.eps)),
        decay_factor(V::set1(s.decay_factor)),
        neg_step_size(V::set1(-s.step_size)) {}
};

// The 16-bit copy of V::kWidth updated parameters, stored normally or streamed (see run_lanes).
template <class V, Copy kCopy, bool kStream>
inline void store_copy(std::uint16_t* copy, std::size_t i, typename V::Reg p) {
  if constexpr (kCopy != Copy::kNone) {
    const auto half = kCopy == Copy::kBf16 ? V::to_bf16(p) : V::to_fp16(p);
    if constexpr (kStream) {
      V::stream_half(copy + i, half);
    } else {
      V::store_half(copy + i, half);
    }
  }
}

// Runs body<W, kStream>(i) over [0, n): V::kWidth elements at a time, then the tail at width 1.
//
// Streaming (non-temporal) stores for the copy. p, m and v are read before they are written, so
// their stores land on lines already in cache. The copy is written blind: a normal store first
// reads each of its lines from memory (write-allocate), 2 more bytes per parameter on top of the
// 2 written. A streaming store skips that read. The caller asks for it on runs too large for the
// copy to stay in cache anyway; it needs the copy aligned to a full vector of halves, and a
// fence after, so the copy is complete in memory when the step returns.
template <class V, Copy kCopy, class Body>
inline void run_lanes(std::uint16_t* copy, std::size_t n, bool stream, Body&& body) {
  std::size_t i = 0;
  if constexpr (kCopy != Copy::kNone && V::kCanStream) {
    if (stream && reinterpret_cast<std::uintptr_t>(copy) % (V::kWidth * sizeof(std::uint16_t)) == 0) {
      for (; i + V::kWidth <= n; i += V::kWidth) body.template operator()<V, true>(i);
      V::fence();
    }
  }
  for (; i + V::kWidth <= n; i += V::kWidth) body.template operator()<V, false>(i);
  if constexpr (V::kWidth > 1) {
    for (; i < n; ++i) body.template operator()<VecScalar, false>(i);
  }
}

// V::kWidth elements at index i: adam_reference's loop body, operation for operation.
template <class V, Decay kDecay, Copy kCopy, bool kStream>
inline void adam_lanes(const Broadcast<V>& b, float* p, const float* g, float* m, float* v, std::uint16_t* copy,
                       std::size_t i) {
  using R = typename V::Reg;
  R gi = V::load(g + i);
  R pi = V::load(p + i);
  if constexpr (kDecay == Decay::kL2) gi = V::fma(b.weight_decay, pi, gi);
  const R mi = V::fma(b.beta1, V::load(m + i), V::mul(b.one_minus_beta1, gi));
  const R vi = V::fma(b.beta2, V::load(v + i), V::mul(V::mul(b.one_minus_beta2, gi), gi));
  const R denom = V::fma(V::sqrt(vi), b.inv_sqrt_bc2, b.eps);
  if constexpr (kDecay == Decay::kDecoupled) pi = V::mul(pi, b.decay_factor);
  pi = V::fma(b.neg_step_size, V::div(mi, denom), pi);
  V::store(p + i, pi);
  V::store(m + i, mi);
  V::store(v + i, vi);
  store_copy<V, kCopy, kStream>(copy, i, pi);
}

template <class V, Decay kDecay, Copy kCopy>
void adam_tile(const AdamStep& s, float* p, const float* g, float* m, float* v, std::uint16_t* copy, std::size_t n,
               bool stream) {
  const Broadcast<V> b(s);
  const Broadcast<VecScalar> b1(s);
  run_lanes<V, kCopy>(copy, n, stream, [&]<class W, bool kStream>(std::size_t i) {
    if constexpr (std::is_same_v<W, V>) {
      adam_lanes<W, kDecay, kCopy, kStream>(b, p, g, m, v, copy, i);
    } else {
      adam_lanes<W, kDecay, kCopy, kStream>(b1, p, g, m, v, copy, i);
    }
  });
}

// The ceiling: adam_lanes' loads and stores with an add in place of the arithmetic.
template <class V, Copy kCopy, bool kStream>
inline void ceiling_lanes(float* p, const float* g, float* m, float* v, std::uint16_t* copy, std::size_t i) {
  using R = typename V::Reg;
  const R gi = V::load(g + i);
  const R pi = V::add(V::load(p + i), gi);
  V::store(p + i, pi);
  V::store(m + i, V::add(V::load(m + i), gi));
  V::store(v + i, V::add(V::load(v + i), gi));
  store_copy<V, kCopy, kStream>(copy, i, pi);
}

template <class V, Copy kCopy>
void ceiling_tile(float* p, const float* g, float* m, float* v, std::uint16_t* copy, std::size_t n, bool stream) {
  run_lanes<V, kCopy>(copy, n, stream, [&]<class W, bool kStream>(std::size_t i) {
    ceiling_lanes<W, kCopy, kStream>(p, g, m, v, copy, i);
  });
}

template <class V, Decay kDecay>
constexpr void fill_adam_row(AdamTileFn (&row)[3]) {
  row[0] = adam_tile<V, kDecay, Copy::kNone>;
  row[1] = adam_tile<V, kDecay, Copy::kBf16>;
  row[2] = adam_tile<V, kDecay, Copy::kFp16>;
}

template <class V>
constexpr KernelTable make_kernel_table() {
  KernelTable t{};
  t.width = V::kWidth;
  fill_adam_row<V, Decay::kNone>(t.adam[0]);
  fill_adam_row<V, Decay::kL2>(t.adam[1]);
  fill_adam_row<V, Decay::kDecoupled>(t.adam[2]);
  t.ceiling[0] = ceiling_tile<V, Copy::kNone>;
  t.ceiling[1] = ceiling_tile<V, Copy::kBf16>;
  t.ceiling[2] = ceiling_tile<V, Copy::kFp16>;
  return t;
}

}  // namespace
}  // namespace zero::cpu_adam
