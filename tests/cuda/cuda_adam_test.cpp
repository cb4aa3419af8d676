// The CUDA Adam against the scalar reference (optim/adamw.h): bit-identical over sizes across
// the grid's boundaries, both decays, Adam and AdamW, with and without bias correction, 16-bit
// gradients and the fused 16-bit copy, and gradients with infinities and NaNs.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "common/error.h"
#include "common/half.h"
#include "optim/adamw.h"
#include "backends/cuda/cuda_adam.h"

namespace zero {
namespace {

template <typename T>
struct Gpu {
  T* p = nullptr;
  explicit Gpu(const std::vector<T>& host) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), host.size() * sizeof(T) + 1), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~Gpu() { cudaFree(p); }
  std::vector<T> get(std::size_t n) const {
    std::vector<T> out(n);
    EXPECT_EQ(cudaMemcpy(out.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

std::vector<float> draw(std::size_t n, std::mt19937_64& rng, float scale) {
  std::normal_distribution<float> z(0.0f, scale);
  std::vector<float> x(n);
  for (auto& v : x) v = z(rng);
  return x;
}

void same_bits(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;  // payloads: left open, as on the CPU
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(float)), 0) << what << " i=" << i << ": " << a[i] << " vs " << b[i];
  }
}

TEST(CudaAdam, BitIdenticalToTheReference) {
  std::mt19937_64 rng(2026);
  for (std::size_t n : {1, 3, 255, 256, 257, 4099, 100003, 1 << 20}) {
    for (int variant = 0; variant < 8; ++variant) {
      AdamConfig cfg;
      cfg.lr = 1e-3f * static_cast<float>(1 + variant);
      cfg.weight_decay = variant % 2 ? 0.1f : 0.0f;
      cfg.decoupled = variant % 4 < 2;
      cfg.bias_correction = variant < 6;
      const bool decay = variant % 3 != 0;
      const Dtype gd = variant % 3 == 0 ? Dtype::kF32 : (variant % 3 == 1 ? Dtype::kBf16 : Dtype::kF16);
      std::vector<float> p = draw(n, rng, 1.0f), m = draw(n, rng, 0.01f), v = draw(n, rng, 1e-4f), g = draw(n, rng, 0.1f);
      for (auto& x : v) x = std::fabs(x);
      if (n > 10) g[n / 2] = std::numeric_limits<float>::infinity(), g[n / 3] = std::numeric_limits<float>::quiet_NaN();
      std::vector<std::uint16_t> g16(n);
      if (gd != Dtype::kF32) {
        narrow_from_f32(g.data(), gd, g16.data(), n);
        widen_to_f32(g16.data(), gd, g.data(), n);  // the reference reads what the GPU reads
      }
      Gpu<float> dp(p), dm(m), dv(v), dg(g);
      Gpu<std::uint16_t> dg16(g16), dcopy(std::vector<std::uint16_t>(n, 0));
      const Dtype cd = variant % 2 ? Dtype::kBf16 : Dtype::kF16;
      for (std::int64_t t = 1; t <= 2; ++t) {
        const AdamStep s = adam_step_scalars(cfg, t * 10 - 9);
        adam_reference(s, decay, p.data(), g.data(), m.data(), v.data(), n);
        cuda_adam_step(s, decay, dp.p, gd == Dtype::kF32 ? static_cast<const void*>(dg.p) : dg16.p, gd, dm.p, dv.p, dcopy.p, cd, n, nullptr);
      }
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::string what = cat("n=", n, " variant=", variant);
      same_bits(dp.get(n), p, what + " p");
      same_bits(dm.get(n), m, what + " m");
      same_bits(dv.get(n), v, what + " v");
      std::vector<std::uint16_t> want(n);
      narrow_from_f32(p.data(), cd, want.data(), n);
      const auto got = dcopy.get(n);
      for (std::size_t i = 0; i < n; ++i) {
        if (!std::isnan(p[i])) { ASSERT_EQ(got[i], want[i]) << what << " copy i=" << i; }
      }
    }
  }
}

}  // namespace
}  // namespace zero
