// The CPU Adam kernel at AVX2 width (8 floats), with FMA and F16C. Compiled with
// -mavx2 -mfma -mf16c (src/CMakeLists.txt); only called when the CPU has them.
#include <immintrin.h>

#include "optim/cpu_adam_body.h"

namespace zero::cpu_adam {
namespace {

struct VecAvx2 {
  using Reg = __m256;
  static constexpr std::size_t kWidth = 8;
  static Reg load(const float* x) { return _mm256_loadu_ps(x); }
  static void store(float* x, Reg a) { _mm256_storeu_ps(x, a); }
  static Reg set1(float a) { return _mm256_set1_ps(a); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
  static Reg sqrt(Reg a) { return _mm256_sqrt_ps(a); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }

  // float_to_bf16 (common/half.h) on 8 lanes: round to nearest even by integer addition;
  // NaN lanes take the quieted top half instead.
  using HalfReg = __m128i;
  static HalfReg to_bf16(Reg a) {
    const __m256i bits = _mm256_castps_si256(a);
    const __m256i high = _mm256_srli_epi32(bits, 16);
    const __m256i lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7FFF)), lsb), 16);
    const __m256i quiet_nan = _mm256_or_si256(high, _mm256_set1_epi32(0x0040));
    const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
    const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
    const __m256i h = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);  // 8 x u16 in u32 lanes
    return _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  }
  // F16C's conversion, round to nearest even, is float_to_fp16 bit for bit (tested).
  static HalfReg to_fp16(Reg a) { return _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static void store_half(std::uint16_t* out, HalfReg h) { _mm_storeu_si128(reinterpret_cast<__m128i*>(out), h); }
  static constexpr bool kCanStream = true;
  static void stream_half(std::uint16_t* out, HalfReg h) { _mm_stream_si128(reinterpret_cast<__m128i*>(out), h); }
  static void fence() { _mm_sfence(); }
};

constexpr KernelTable kTable = make_kernel_table<VecAvx2>();

}  // namespace

const KernelTable* kernels_avx2() { return &kTable; }

}  // namespace zero::cpu_adam
