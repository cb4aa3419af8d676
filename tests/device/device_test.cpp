// The device seam: every device's operations give the CPU device's bits, and the strict device
// really keeps its device memory out of the host's reach.
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <numeric>

#include "common/error.h"
#include "device/device.h"

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

INSTANTIATE_TEST_SUITE_P(All, Devices, ::testing::Values("cpu", "strict"));

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

TEST(DeviceFactory, UnknownNameSaysWhatExists) {
  Ledger ledger;
  try {
    make_device("gpu0", ledger);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("use cpu, strict"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zero
