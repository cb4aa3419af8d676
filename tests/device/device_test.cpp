// The device seam: every device's operations give the CPU device's bits, and the strict device
// really keeps its device memory out of the host's reach.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <future>
#include <numeric>

#include "common/error.h"
#include "common/half.h"
#include "backends/registry.h"
#include "device/device.h"
#include "device/host_ops.h"
#include "optim/adamw.h"
#include "optim/lamb.h"
#include "partition/layout.h"

namespace zero {
namespace {

// Reads a span through the device's transport view (what a communicator reads).
std::vector<float> read(Device& d, const DeviceSpan& s) {
  const std::span<float> v(static_cast<float*>(d.transport(s)), s.size());
  return {v.begin(), v.end()};
}

void write(Device& d, const DeviceSpan& s, const std::vector<float>& values) {
  const std::span<float> v(static_cast<float*>(d.transport(s)), s.size());
  std::copy(values.begin(), values.end(), v.begin());
}

class Devices : public ::testing::TestWithParam<const char*> {};

TEST_P(Devices, OperationsMatchTheirDefinitions) {
  for (std::size_t n : {1, 2, 7, 64, 1001}) {
    Ledger ledger;
    auto dev = make_device(GetParam(), ledger);
    DeviceBuffer a = dev->alloc(Tier::kDevice, Category::kOther, n, "a");
    DeviceBuffer b = dev->alloc(Tier::kDevice, Category::kOther, n, "b");
    DeviceBuffer h = dev->alloc(Tier::kHost, Category::kOther, n, "h");
    EXPECT_EQ(ledger.current(Tier::kDevice, Category::kOther), 2 * n * sizeof(float));
    std::vector<float> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = 0.1f * static_cast<float>(i) - 3.0f;
      y[i] = 1.0f / static_cast<float>(i + 3);
    }
    write(*dev, h.span(), x);
    dev->copy(dev->copies(), a.span(), h.span());  // host -> device on the copy thread
    dev->copies().synchronize();
    write(*dev, h.span(), y);
    dev->copy(dev->compute(), b.span(), h.span());
    dev->add(dev->compute(), a.span(), b.span());
    dev->divide(dev->compute(), a.span(), 3.0f);
    dev->scale(dev->compute(), a.span(), 0.5f);
    dev->copy(dev->compute(), h.span(), a.span());
    const std::vector<float> got = read(*dev, h.span());
    double ss = 0.25;
    for (std::size_t i = 0; i < n; ++i) {
      const float want = ((x[i] + y[i]) / 3.0f) * 0.5f;
      ASSERT_EQ(std::memcmp(&got[i], &want, sizeof want), 0) << GetParam() << " n=" << n << " i=" << i;
      ss += static_cast<double>(want) * want;
    }
    EXPECT_EQ(dev->sum_squares(dev->compute(), a.span(), 0.25), ss);
    EXPECT_EQ(dev->link_bytes().to_device, 2 * n * sizeof(float));
    EXPECT_EQ(dev->link_bytes().to_host, n * sizeof(float));
    dev->fill(dev->compute(), b.sub(1, n - 1), 2.5f);
    dev->copy(dev->compute(), h.span(), b.span());
    EXPECT_EQ(read(*dev, h.span()).back(), n > 1 ? 2.5f : y[0]);
    // Zero takes memset's way (host_ops.cpp), -0.0 the loop's: each writes its own bits, only in the span.
    for (const float zero : {0.0f, -0.0f}) {
      dev->fill(dev->compute(), b.span(), 2.5f);
      dev->fill(dev->compute(), b.sub(0, n - 1), zero);
      dev->copy(dev->compute(), h.span(), b.span());
      const std::vector<float> filled = read(*dev, h.span());
      for (std::size_t i = 0; i + 1 < n; ++i) ASSERT_EQ(std::bit_cast<std::uint32_t>(filled[i]), std::bit_cast<std::uint32_t>(zero)) << i;
      EXPECT_EQ(filled.back(), 2.5f) << "fill wrote past its span";
    }
  }
}

TEST_P(Devices, AFailedCopyFailsItsStreamAndNothingAfter) {
  Ledger ledger;
  auto dev = make_device(GetParam(), ledger);
  DeviceBuffer a = dev->alloc(Tier::kDevice, Category::kOther, 4, "a");
  DeviceBuffer h = dev->alloc(Tier::kHost, Category::kOther, 4, "h");
  std::promise<void> failed;
  failed.set_exception(std::make_exception_ptr(CommError("[comm] test failure")));
  dev->copies().wait(Handle(failed.get_future().share()));
  write(*dev, h.span(), {1, 2, 3, 4});
  dev->copy(dev->copies(), a.span(), h.span());
  EXPECT_THROW(dev->copies().synchronize(), CommError);
  dev->copy(dev->compute(), h.span(), a.span());
  EXPECT_EQ(read(*dev, h.span()), std::vector<float>(4, 0.0f)) << "the copy after the failure must not have run";
}

TEST_P(Devices, CapacityIsRefusedBeforeAllocating) {
  Ledger ledger;
  ledger.set_capacity(Tier::kDevice, 100);
  auto dev = make_device(GetParam(), ledger);
  EXPECT_THROW(dev->alloc(Tier::kDevice, Category::kParameters, 26, "too much"), OutOfMemoryError);
  EXPECT_EQ(ledger.usage(Tier::kDevice).total_peak, 0u);
  DeviceBuffer fits = dev->alloc(Tier::kDevice, Category::kParameters, 25, "fits");
  EXPECT_EQ(ledger.usage(Tier::kDevice).total_current, 100u);
}

// Two sizes set against each other in a message never print alike: 37.58 MiB against one byte
// less gets the exact counts; sizes that already differ in print stay short.
TEST(FormatBytes, BesideAnotherSizeItDiffersInPrint) {
  const std::uint64_t need = 39404544;  // 37.58 MiB
  for (std::uint64_t have : {need - 1, need - 4096, need + 1}) {
    EXPECT_EQ(format_bytes(need), format_bytes(have));
    EXPECT_NE(format_bytes_beside(need, have), format_bytes_beside(have, need));
    EXPECT_EQ(format_bytes_beside(need, have), "37.58 MiB (39404544 bytes)");
  }
  EXPECT_EQ(format_bytes_beside(need, need / 2), "37.58 MiB");
  EXPECT_EQ(format_bytes_beside(need, need), "37.58 MiB");
  EXPECT_EQ(format_bytes_beside(1023, 1022), "1023 B");
}

// 16-bit spans: every operation is the f32 operation on the widened values, rounded once (to
// nearest even, common/half.h); convert widens exactly and narrows by that rounding; Adam reads
// 16-bit gradients and writes the 16-bit copy of its f32 parameters in the same pass; link bytes
// and the ledger count 2 bytes an element.
std::vector<std::uint16_t> bits(const std::vector<float>& f, Dtype d) {
  std::vector<std::uint16_t> h(f.size());
  narrow_from_f32(f.data(), d, h.data(), f.size());
  return h;
}
std::vector<float> widened(const std::vector<std::uint16_t>& h, Dtype d) {
  std::vector<float> f(h.size());
  widen_to_f32(h.data(), d, f.data(), h.size());
  return f;
}

TEST_P(Devices, SixteenBitOperationsAreTheF32OnesRoundedOnce) {
  for (Dtype d : {Dtype::kBf16, Dtype::kF16})
    for (std::size_t n : {1, 7, 4097, 9000}) {  // past the 4096-element tiles
      SCOPED_TRACE(::testing::Message() << dtype_label(d) << " n=" << n);
      Ledger ledger;
      auto dev = make_device(GetParam(), ledger);
      DeviceBuffer a = dev->alloc(Tier::kDevice, Category::kOther, n, "a", d);
      DeviceBuffer b = dev->alloc(Tier::kDevice, Category::kOther, n, "b", d);
      DeviceBuffer f = dev->alloc(Tier::kDevice, Category::kOther, n, "f", Dtype::kF32);
      DeviceBuffer h = dev->alloc(Tier::kHost, Category::kOther, n, "h", d);
      DeviceBuffer hf = dev->alloc(Tier::kHost, Category::kOther, n, "hf", Dtype::kF32);
      EXPECT_EQ(ledger.current(Tier::kDevice, Category::kOther), 2 * n * 2 + n * 4);
      std::vector<float> x(n), y(n);
      for (std::size_t i = 0; i < n; ++i) {
        x[i] = 0.37f * static_cast<float>(i % 97) - 11.0f;
        y[i] = 1.0f / static_cast<float>(i % 13 + 3);
      }
      const std::vector<std::uint16_t> xh = bits(x, d), yh = bits(y, d);
      auto* host16 = static_cast<std::uint16_t*>(dev->transport(h.span()));
      auto* host32 = static_cast<float*>(dev->transport(hf.span()));
      std::copy(xh.begin(), xh.end(), host16);
      dev->copy(dev->compute(), a.span(), h.span());
      std::copy(yh.begin(), yh.end(), host16);
      dev->copy(dev->compute(), b.span(), h.span());
      std::copy(y.begin(), y.end(), host32);
      dev->copy(dev->compute(), f.span(), hf.span());
      EXPECT_EQ(dev->link_bytes().to_device, 2 * n * 2 + n * 4);
      dev->add(dev->compute(), a.span(), b.span());  // 16 + 16
      dev->add(dev->compute(), a.span(), f.span());  // 16 + f32
      dev->divide(dev->compute(), a.span(), 3.0f);
      dev->scale(dev->compute(), a.span(), 0.5f);
      dev->copy(dev->compute(), h.span(), a.span());
      const std::vector<float> xw = widened(xh, d), yw = widened(yh, d);
      std::vector<float> want(n);
      double ss = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const auto round = [d](float v) { return widened(bits({v}, d), d)[0]; };
        want[i] = round(round(round(round(xw[i] + yw[i]) + y[i]) / 3.0f) * 0.5f);
        ss += static_cast<double>(want[i]) * want[i];
      }
      EXPECT_EQ(bits(want, d), std::vector<std::uint16_t>(host16, host16 + n));
      EXPECT_EQ(dev->sum_squares(dev->compute(), a.span(), 0.0), ss);
      EXPECT_FALSE(dev->nonfinite(dev->compute(), a.span()));
      dev->convert(dev->compute(), f.span(), a.span());  // widening is exact
      dev->copy(dev->compute(), hf.span(), f.span());
      EXPECT_EQ(std::vector<float>(host32, host32 + n), want);
      std::copy(x.begin(), x.end(), host32);
      dev->copy(dev->compute(), f.span(), hf.span());
      dev->convert(dev->compute(), a.span(), f.span());  // narrowing rounds to nearest even
      dev->copy(dev->compute(), h.span(), a.span());
      EXPECT_EQ(std::vector<std::uint16_t>(host16, host16 + n), xh);
      host16[n - 1] = d == Dtype::kBf16 ? 0x7F80 : 0x7C00;  // +inf
      dev->copy(dev->compute(), a.span(), h.span());
      EXPECT_TRUE(dev->nonfinite(dev->compute(), a.span()));
      dev->fill(dev->compute(), a.span(), 0.1f);
      dev->copy(dev->compute(), h.span(), a.span());
      EXPECT_EQ(std::vector<std::uint16_t>(host16, host16 + n), bits(std::vector<float>(n, 0.1f), d));
    }
}

// The conversions and the one-pass add of f32 into 16-bit run vectorised (AVX-512, AVX2 or the
// baseline: common/vector_clones.h); over whole arrays they give, bit for bit, the element-wise
// reference conversions of common/half.h: every 16-bit pattern widened (NaNs, infinities,
// subnormals, -0), and narrowed from floats around every pattern (ties, overflow, NaN payloads).
TEST(SixteenBitArrays, VectorisedConversionsAndAddAreTheElementwiseReference) {
  for (Dtype d : {Dtype::kBf16, Dtype::kF16}) {
    SCOPED_TRACE(dtype_label(d));
    const bool bf = d == Dtype::kBf16;
    std::vector<std::uint16_t> all(65536);
    std::iota(all.begin(), all.end(), 0);
    std::vector<float> wide(all.size());
    widen_to_f32(all.data(), d, wide.data(), all.size());
    std::vector<float> floats;  // each pattern's value, and just above and below it in f32
    for (std::size_t i = 0; i < all.size(); ++i) {
      const float want = bf ? bf16_to_float(all[i]) : fp16_to_float(all[i]);
      ASSERT_EQ(__builtin_bit_cast(std::uint32_t, wide[i]), __builtin_bit_cast(std::uint32_t, want)) << "pattern " << i;
      const std::uint32_t u = __builtin_bit_cast(std::uint32_t, want);
      for (std::uint32_t b : {u, u + 1, u - 1, u + 0x1000u, u + 0x8000u}) floats.push_back(__builtin_bit_cast(float, b));
    }
    std::vector<std::uint16_t> narrow(floats.size());
    narrow_from_f32(floats.data(), d, narrow.data(), floats.size());
    for (std::size_t i = 0; i < floats.size(); ++i)
      ASSERT_EQ(narrow[i], bf ? float_to_bf16(floats[i]) : float_to_fp16(floats[i])) << "float bits " << std::hex
                                                                                   << __builtin_bit_cast(std::uint32_t, floats[i]);
    // The add: every pattern plus an f32 from the list above, through the cpu device.
    Ledger ledger;
    auto dev = make_device("cpu", ledger);
    DeviceBuffer a = dev->alloc(Tier::kDevice, Category::kOther, all.size(), "a", d);
    DeviceBuffer f = dev->alloc(Tier::kDevice, Category::kOther, all.size(), "f");
    auto* a16 = static_cast<std::uint16_t*>(dev->transport(a.span()));
    auto* f32 = static_cast<float*>(dev->transport(f.span()));
    std::copy(all.begin(), all.end(), a16);
    for (std::size_t i = 0; i < all.size(); ++i) f32[i] = floats[(i * 7919) % floats.size()];
    dev->add(dev->compute(), a.span(), f.span());
    for (std::size_t i = 0; i < all.size(); ++i) {
      const std::uint16_t want = bf ? float_to_bf16(bf16_to_float(all[i]) + f32[i]) : float_to_fp16(fp16_to_float(all[i]) + f32[i]);
      ASSERT_EQ(a16[i], want) << "pattern " << i << " + f32 bits " << std::hex << __builtin_bit_cast(std::uint32_t, f32[i]);
    }
  }
}

// fill of +0.0 takes memset's way (host_ops.cpp), -0.0 the loop's: in bf16 and fp16 too, each
// element gets the value's own 16 bits (0x0000, 0x8000), and nothing past the run.
TEST(SixteenBitArrays, FillsOfZeroAndMinusZeroWriteTheirBitsInTheRunOnly) {
  for (Dtype d : {Dtype::kBf16, Dtype::kF16}) {
    for (const float zero : {0.0f, -0.0f}) {
      std::vector<std::uint16_t> a(1001, 0x3c00);
      host_ops::fill({a.data(), a.size() - 1, d}, zero);
      const std::uint16_t want = std::signbit(zero) ? 0x8000 : 0x0000;
      for (std::size_t i = 0; i + 1 < a.size(); ++i) ASSERT_EQ(a[i], want) << dtype_label(d) << " " << zero << " at " << i;
      EXPECT_EQ(a.back(), 0x3c00) << dtype_label(d) << ": fill wrote past its run";
    }
  }
}

TEST_P(Devices, AdamReadsSixteenBitGradientsAndWritesTheSixteenBitCopy) {
  for (Dtype d : {Dtype::kBf16, Dtype::kF16}) {
    const std::size_t n = 5000;
    Ledger ledger;
    auto dev = make_device(GetParam(), ledger);
    DeviceBuffer p = dev->alloc(Tier::kHost, Category::kOther, n, "p"), m = dev->alloc(Tier::kHost, Category::kOther, n, "m"),
                 v = dev->alloc(Tier::kHost, Category::kOther, n, "v"), g = dev->alloc(Tier::kHost, Category::kOther, n, "g", d),
                 copy = dev->alloc(Tier::kHost, Category::kOther, n, "copy", d);
    std::vector<float> p0(n), gf(n);
    for (std::size_t i = 0; i < n; ++i) p0[i] = 0.01f * static_cast<float>(i % 101) - 0.5f, gf[i] = 0.003f * static_cast<float>(i % 37) - 0.05f;
    const std::vector<std::uint16_t> gh = bits(gf, d);
    std::copy(p0.begin(), p0.end(), static_cast<float*>(dev->transport(p.span())));
    std::copy(gh.begin(), gh.end(), static_cast<std::uint16_t*>(dev->transport(g.span())));
    AdamConfig cfg;
    cfg.lr = 1e-2f;
    cfg.weight_decay = 0.1f;
    const AdamStep s = adam_step_scalars(cfg, 1);
    const std::vector<Segment> segments = {{0, 3000, 0, 0, true}, {3000, 1999, 1, 0, false}, {4999, 1, -1, 0, false}};
    dev->adam(dev->compute(), s, segments, p.span(), g.span(), m.span(), v.span(), copy.span());
    dev->host().synchronize();
    std::vector<float> rp = p0, rm(n, 0.0f), rv(n, 0.0f);
    const std::vector<float> gw = widened(gh, d);
    for (const Segment& seg : segments) {
      if (seg.param < 0) continue;
      adam_reference(s, seg.decay, &rp[seg.offset], &gw[seg.offset], &rm[seg.offset], &rv[seg.offset], seg.numel);
    }
    const auto* got = static_cast<const float*>(dev->transport(p.span()));
    EXPECT_EQ(std::memcmp(got, rp.data(), n * sizeof(float)), 0) << dtype_label(d);
    const auto* c = static_cast<const std::uint16_t*>(dev->transport(copy.span()));
    const std::vector<std::uint16_t> want = bits(std::vector<float>(rp.begin(), rp.end() - 1), d);
    EXPECT_EQ(std::vector<std::uint16_t>(c, c + n - 1), want) << dtype_label(d) << ": the copy is the updated parameters, rounded";
  }
}

INSTANTIATE_TEST_SUITE_P(All, Devices, ::testing::Values("cpu", "strict"));

// The counting device computes nothing but accounts every allocation by dtype: 2 bytes an
// element for bf16 and f16, 4 for f32; its operations, the new ones included, do nothing.
// The cpu device keeps freed blocks for the next allocation of their size (page faults cost a
// stage 3 step 100+ ms otherwise). A block past glibc's mmap threshold (32 MiB) comes back from
// the system zeroed, so a byte written before the free that is there again proves the block was
// kept. Taking a block must return its bytes to the budget: it once did not, and after 256 MiB
// of reuse every freed block went back to the system.
TEST(CpuDevice, KeepsFreedBlocksForReuseRoundAfterRound) {
  Ledger ledger;
  auto dev = make_device("cpu", ledger);
  const std::size_t n = std::size_t{40} << 18;  // 40 MiB of f32
  for (int round = 0; round < 20; ++round) {
    DeviceBuffer b = dev->alloc(Tier::kDevice, Category::kOther, n, "block", Dtype::kF32, false);
    auto* p = static_cast<unsigned char*>(dev->transport(b.span()));
    if (round > 0) {
      ASSERT_EQ(p[n * 2], 0xAB) << "round " << round << ": the freed block was not reused";
    }
    p[n * 2] = 0xAB;
  }
}

TEST(CountingDevice, CountsBytesByDtypeAndComputesNothing) {
  Ledger ledger;
  auto dev = make_device("counting", ledger);
  DeviceBuffer a = dev->alloc(Tier::kDevice, Category::kParameters, 1000, "a", Dtype::kBf16);
  DeviceBuffer b = dev->alloc(Tier::kDevice, Category::kGradients, 1000, "b", Dtype::kF16);
  DeviceBuffer c = dev->alloc(Tier::kHost, Category::kOptimizerState, 1000, "c", Dtype::kF32);
  EXPECT_EQ(ledger.current(Tier::kDevice, Category::kParameters), 2000u);
  EXPECT_EQ(ledger.current(Tier::kDevice, Category::kGradients), 2000u);
  EXPECT_EQ(ledger.current(Tier::kHost, Category::kOptimizerState), 4000u);
  dev->convert(dev->compute(), a.span(), b.span());
  dev->add(dev->compute(), a.span(), b.span());
  EXPECT_FALSE(dev->nonfinite(dev->compute(), a.span()));
  dev->adam(dev->compute(), adam_step_scalars(AdamConfig{}, 1), {{0, 1000, 0, 0, true}}, c.span(), a.span(), c.span(), c.span(), b.span());
  dev->copy(dev->compute(), c.sub(0, 10), c.sub(10, 10));
  EXPECT_EQ(dev->transport(a.span()), nullptr);
  a.reset();
  EXPECT_EQ(ledger.current(Tier::kDevice, Category::kParameters), 0u);
}

// The seam's proof is only as good as the strict device: its device-tier addresses must fault
// when the host dereferences them, where the CPU device's do not.
struct Peek : Device {
  static float* address(const DeviceSpan& s) { return static_cast<float*>(raw(s)); }
};

TEST(StrictDevice, HostDereferenceOfDeviceMemoryFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Ledger ledger;
  auto cpu = make_device("cpu", ledger);
  DeviceBuffer c = cpu->alloc(Tier::kDevice, Category::kOther, 4, "c");
  EXPECT_EQ(*Peek::address(c.span()), 0.0f);  // host memory: readable
  EXPECT_DEATH(
      {
        auto strict = make_device("strict", ledger);
        DeviceBuffer s = strict->alloc(Tier::kDevice, Category::kOther, 4, "s");
        volatile float v = *Peek::address(s.span());
        (void)v;
      },
      "");
}

// An operation a backend lacks (Device::supports) runs through the device layer's one host-staged
// fallback. The strict device lacks Lamb and init (as the cuda device does), so this runs that
// fallback without a GPU: on device-tier spans the host cannot read, it gives the cpu device's bits.
TEST(HostFallback, StrictRunsLambAndInitThroughItWithTheCpuBits) {
  Ledger ledger;
  auto cpu = make_device("cpu", ledger);
  auto strict = make_device("strict", ledger);
  EXPECT_TRUE(cpu->supports(DeviceOp::kLamb) && cpu->supports(DeviceOp::kInit));
  EXPECT_FALSE(strict->supports(DeviceOp::kLamb) || strict->supports(DeviceOp::kInit));
  const std::size_t n = 1000;
  UnitPlace unit;
  unit.name = "u";
  const auto rows = static_cast<std::int64_t>(n - 1);
  unit.params.push_back({ParamSpec{"w", {rows}, Init::normal(0.02f), true}, 0, n - 1});
  unit.numel = n - 1;
  unit.padded = unit.slice = n;
  const std::vector<Segment> segments = {{0, n - 1, 0, 0, true}, {n - 1, 1, -1, 0, false}};
  const LambStep step = lamb_step_scalars(AdamConfig{}, LambConfig{}, 1);
  std::vector<std::vector<float>> results;
  std::vector<LambNorms> sums[2];
  for (Device* d : {cpu.get(), strict.get()}) {
    DeviceBuffer p = d->alloc(Tier::kDevice, Category::kOther, n, "p"), g = d->alloc(Tier::kDevice, Category::kOther, n, "g"),
                 m = d->alloc(Tier::kDevice, Category::kOther, n, "m"), v = d->alloc(Tier::kDevice, Category::kOther, n, "v"),
                 h = d->alloc(Tier::kHost, Category::kOther, n, "h");
    d->init(d->compute(), unit, segments, 7, p.span());
    d->init(d->compute(), unit, segments, 8, g.span());
    sums[d == cpu.get() ? 0 : 1] = d->lamb_moments(d->compute(), step, segments, p.span(), g.span(), m.span(), v.span(), 0, n);
    d->lamb_update(d->compute(), step, segments, {0.5f, 0.0f}, p.span(), m.span(), v.span(), {});
    for (const DeviceBuffer* b : {&p, &m, &v}) {
      d->copy(d->compute(), h.span(), b->span());
      results.push_back(read(*d, h.span()));
    }
  }
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(std::memcmp(results[i].data(), results[i + 3].data(), n * sizeof(float)), 0) << "p, m, v: " << i;
  ASSERT_EQ(sums[0].size(), sums[1].size());
  for (std::size_t k = 0; k < sums[0].size(); ++k) EXPECT_TRUE(sums[0][k].param == sums[1][k].param && sums[0][k].update == sums[1][k].update) << k;
}

TEST(DeviceFactory, UnknownNameSaysWhatExists) {
  Ledger ledger;
  try {
    make_device("gpu0", ledger);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("use cpu, cuda, strict"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zero
