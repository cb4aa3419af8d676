// The CPU Adam kernel at AVX-512 width (16 floats). Compiled with
// -mavx512f -mavx2 -mfma -mf16c (src/CMakeLists.txt); only called when the CPU has AVX-512F.
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own _mm512_undefined_* values
// (GCC bug 105593); the warning is about the headers, not this file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "optim/cpu_adam_body.h"

namespace zero::cpu_adam {
namespace {

struct VecAvx512 {
  using Reg = __m512;
  static constexpr std::size_t kWidth = 16;
  static Reg load(const float* x) { return _mm512_loadu_ps(x); }
  static void store(float* x, Reg a) { _mm512_storeu_ps(x, a); }
  static Reg set1(float a) { return _mm512_set1_ps(a); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
  static Reg sqrt(Reg a) { return _mm512_sqrt_ps(a); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }

  // float_to_bf16 (common/half.h) on 16 lanes, as in cpu_adam_avx2.cpp.
  using HalfReg = __m256i;
  static HalfReg to_bf16(Reg a) {
    const __m512i bits = _mm512_castps_si512(a);
    const __m512i high = _mm512_srli_epi32(bits, 16);
    const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7FFF)), lsb), 16);
    const __m512i quiet_nan = _mm512_or_si512(high, _mm512_set1_epi32(0x0040));
    const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
    const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7F800000));
    return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, quiet_nan));
  }
  static HalfReg to_fp16(Reg a) { return _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static void store_half(std::uint16_t* out, HalfReg h) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), h); }
  static constexpr bool kCanStream = true;
  static void stream_half(std::uint16_t* out, HalfReg h) { _mm256_stream_si256(reinterpret_cast<__m256i*>(out), h); }
  static void fence() { _mm_sfence(); }
};

constexpr KernelTable kTable = make_kernel_table<VecAvx512>();

}  // namespace

const KernelTable* kernels_avx512() { return &kTable; }

}  // namespace zero::cpu_adam
