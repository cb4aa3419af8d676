// The cuda device against the cpu device, the seam's oracle: every operation, every dtype, sizes
// across the kernels' block and run boundaries, random inputs drawn here; the results must be
// the same bits (not close: the same).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backends/registry.h"
#include "device/device.h"
#include "partition/layout.h"

namespace zero {
namespace {

const std::vector<std::size_t> kSizes = {1, 2, 31, 255, 256, 257, 1000, 8191, 8192, 8193, 65537, 300001};
const Dtype kDtypes[] = {Dtype::kF32, Dtype::kBf16, Dtype::kF16};

// Values of mixed magnitude and sign (a scale drawn per element), as f32.
std::vector<float> random_values(std::size_t n, std::uint64_t seed, float spread = 8.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> z(0.0f, 1.0f);
  std::uniform_real_distribution<float> e(-spread, spread);
  std::vector<float> x(n);
  for (auto& v : x) v = z(rng) * std::exp2(e(rng));
  return x;
}

// One device with a span of `d` holding x (written through a host f32 buffer and converted).
struct Side {
  Ledger ledger;
  std::unique_ptr<Device> dev;
  explicit Side(const char* name) : dev(make_device(name, ledger)) {}
  DeviceBuffer upload(const std::vector<float>& x, Dtype d) {
    DeviceBuffer h = dev->alloc(Tier::kHost, Category::kOther, x.size(), "in");
    std::memcpy(dev->transport(h.span()), x.data(), x.size() * sizeof(float));
    DeviceBuffer b = dev->alloc(Tier::kDevice, Category::kOther, x.size(), "x", d);
    dev->convert(dev->compute(), b.span(), h.span());
    dev->compute().synchronize();
    return b;
  }
  std::vector<unsigned char> download(const DeviceSpan& s) {
    DeviceBuffer h = dev->alloc(Tier::kHost, Category::kOther, s.size(), "out", s.dtype());
    dev->copy(dev->compute(), h.span(), s);
    const auto* p = static_cast<const unsigned char*>(dev->transport(h.span()));
    return {p, p + s.bytes()};
  }
};

template <typename Op>
void expect_same(const char* what, Dtype d, std::size_t n, Op op) {
  Side cpu("cpu"), gpu("cuda");
  const auto a = op(cpu), b = op(gpu);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b) << what << " " << dtype_label(d) << " n=" << n;
}

TEST(CudaOps, ElementWiseOperationsGiveTheCpuBits) {
  std::uint64_t seed = 1;
  for (Dtype d : kDtypes) {
    for (std::size_t n : kSizes) {
      const auto x = random_values(n, seed++), y = random_values(n, seed++);
      expect_same("fill", d, n, [&](Side& s) {
        DeviceBuffer b = s.upload(x, d);
        s.dev->fill(s.dev->compute(), b.span(), 0.1f);
        return s.download(b.span());
      });
      expect_same("add, divide, scale", d, n, [&](Side& s) {
        DeviceBuffer a = s.upload(x, d), b = s.upload(y, d), f = s.upload(y, Dtype::kF32);
        s.dev->add(s.dev->compute(), a.span(), b.span());
        s.dev->add(s.dev->compute(), a.span(), f.span());  // an f32 addend into any dtype
        s.dev->divide(s.dev->compute(), a.span(), 3.0f);
        s.dev->scale(s.dev->compute(), a.span(), 0.7f);
        return s.download(a.span());
      });
      for (Dtype to : kDtypes) {
        expect_same("convert", d, n, [&](Side& s) {
          DeviceBuffer a = s.upload(x, d);
          DeviceBuffer b = s.dev->alloc(Tier::kDevice, Category::kOther, n, "b", to);
          s.dev->convert(s.dev->compute(), b.span(), a.span());
          return s.download(b.span());
        });
      }
    }
  }
}

TEST(CudaOps, SumSquaresIsTheSequentialDoubleSumBitForBit) {
  std::uint64_t seed = 100;
  for (Dtype d : kDtypes) {
    for (std::size_t n : kSizes) {
      for (double acc : {0.0, 1e-300, 0.75, 1e30}) {
        for (float spread : {1.0f, 20.0f}) {
          const auto x = random_values(n, seed++, spread);
          double r[2];
          int i = 0;
          for (const char* name : {"cpu", "cuda"}) {
            Side s(name);
            DeviceBuffer b = s.upload(x, d);
            r[i++] = s.dev->sum_squares(s.dev->compute(), b.span(), acc);
          }
          EXPECT_EQ(std::memcmp(&r[0], &r[1], sizeof(double)), 0)
              << dtype_label(d) << " n=" << n << " acc=" << acc << ": cpu " << r[0] << " cuda " << r[1];
        }
      }
    }
  }
}

TEST(CudaOps, NonfiniteFindsOneInfinityOrNanAnywhere) {
  for (Dtype d : kDtypes) {
    for (std::size_t n : {1, 300, 70001}) {
      for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 1e6f}) {
        auto x = random_values(n, n, 1.0f);
        x[(n * 7) / 11] = bad;  // 1e6: finite in f32 and bf16, an infinity in f16
        bool r[2];
        int i = 0;
        for (const char* name : {"cpu", "cuda"}) {
          Side s(name);
          DeviceBuffer b = s.upload(x, d);
          r[i++] = s.dev->nonfinite(s.dev->compute(), b.span());
        }
        EXPECT_EQ(r[0], r[1]) << dtype_label(d) << " n=" << n << " bad=" << bad;
      }
    }
  }
}

TEST(CudaOps, InitGivesTheCpuValues) {
  std::vector<UnitSpec> units(1);
  units[0].name = "u";
  units[0].params = {ParamSpec{"w", {300, 7}, {InitKind::kNormal, 0.02f}, true}, ParamSpec{"b", {7}, {InitKind::kUniform, 0.5f}, false}};
  const FlatLayout layout(units, 3);
  for (Dtype d : kDtypes) {
    for (int r = 0; r < 3; ++r) {
      expect_same("init", d, layout.unit(0).slice, [&](Side& s) {
        DeviceBuffer b = s.dev->alloc(Tier::kDevice, Category::kOther, layout.unit(0).slice, "slice", d);
        s.dev->init(s.dev->compute(), layout.unit(0), layout.slice_segments(0, r), 1234, b.span());
        return s.download(b.span());
      });
    }
  }
}

TEST(CudaOps, AdamThroughTheDeviceGivesTheCpuBits) {
  const std::size_t n = 20011;
  const std::vector<Segment> segments = {{0, 9000, 0, 0, true}, {9000, 11000, 1, 0, false}, {20000, 11, -1, 0, false}};
  for (Dtype gd : kDtypes) {
    for (Tier tier : {Tier::kDevice, Tier::kHost}) {
      expect_same("adam", gd, n, [&](Side& s) {
        AdamConfig cfg;
        cfg.lr = 3e-3f;
        cfg.weight_decay = 0.01f;
        DeviceBuffer p = s.upload(random_values(n, 1, 2.0f), Dtype::kF32), g = s.upload(random_values(n, 2), gd);
        DeviceBuffer m = s.dev->alloc(Tier::kDevice, Category::kOther, n, "m"), v = s.dev->alloc(Tier::kDevice, Category::kOther, n, "v");
        DeviceBuffer c = s.dev->alloc(Tier::kDevice, Category::kOther, n, "copy", Dtype::kBf16);
        std::vector<DeviceBuffer> hosts;  // the host tier: offload's CPU Adam on the host stream
        auto place = [&](DeviceBuffer& b) {
          if (tier == Tier::kDevice) return b.span();
          hosts.push_back(s.dev->alloc(Tier::kHost, Category::kOther, b.size(), "host", b.dtype()));
          s.dev->copy(s.dev->compute(), hosts.back().span(), b.span());
          return hosts.back().span();
        };
        hosts.reserve(5);
        const DeviceSpan sp = place(p), sg = place(g), sm = place(m), sv = place(v), sc = place(c);
        s.dev->compute().synchronize();
        Stream& st = tier == Tier::kHost ? s.dev->host() : s.dev->compute();
        for (int t = 1; t <= 3; ++t) s.dev->adam(st, adam_step_scalars(cfg, t), segments, sp, sg, sm, sv, sc);
        st.synchronize();
        auto out = s.download(sp);
        for (const DeviceSpan& x : {sm, sv, sc}) {
          const auto more = s.download(x);
          out.insert(out.end(), more.begin(), more.end());
        }
        return out;
      });
    }
  }
}

TEST(CudaOps, LedgerAgreesWithTheGpusFreeMemory) {
  Side s("cuda");
  std::size_t free0 = 0, total = 0;
  s.dev->compute().synchronize();
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  std::vector<DeviceBuffer> held;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::size_t> numel(1, std::size_t{64} << 20);  // up to 256 MiB of f32
  for (int i = 0; i < 24; ++i) held.push_back(s.dev->alloc(Tier::kDevice, Category::kOther, numel(rng), "block"));
  std::size_t free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  const std::uint64_t ledger = s.ledger.current(Tier::kDevice, Category::kOther);
  const std::uint64_t used = free0 - free1;
  // The slack: cudaMalloc rounds each block up to the driver's 2 MiB granularity.
  const std::uint64_t slack = held.size() * (std::uint64_t{2} << 20);
  EXPECT_GE(used, ledger);
  EXPECT_LE(used, ledger + slack) << "ledger " << ledger << " B, cudaMemGetInfo " << used << " B";
  held.clear();
  std::size_t free2 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free2, &total), cudaSuccess);
  EXPECT_EQ(s.ledger.current(Tier::kDevice, Category::kOther), 0u);
  EXPECT_EQ(free2, free0) << "every block returned";
}

}  // namespace
}  // namespace zero
