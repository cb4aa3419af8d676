#include "device/link_bandwidth.h"

#include <algorithm>
#include <chrono>

namespace zero {
namespace {

// Seconds for `copies` copies issued by `issue` and then synchronized.
template <typename Issue, typename Sync>
double timed(int copies, Issue issue, Sync sync) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < copies; ++i) issue();
  sync();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<LinkFigure> measure_link(Device& device, const std::vector<std::size_t>& sizes, int repeats) {
  std::vector<LinkFigure> out;
  for (std::size_t bytes : sizes) {
    const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(float));
    DeviceBuffer h1 = device.alloc(Tier::kHost, Category::kOther, n, "link benchmark (host)");
    DeviceBuffer h2 = device.alloc(Tier::kHost, Category::kOther, n, "link benchmark (host)");
    DeviceBuffer d1 = device.alloc(Tier::kDevice, Category::kOther, n, "link benchmark (device)");
    DeviceBuffer d2 = device.alloc(Tier::kDevice, Category::kOther, n, "link benchmark (device)");
    LinkFigure f;
    f.bytes = n * sizeof(float);
    f.pinned = device.pin(h1) && device.pin(h2);
    const int copies = static_cast<int>(std::max<std::size_t>(2, (std::size_t{256} << 20) / f.bytes));
    Stream& a = device.copies();
    Stream& b = device.host();
    auto to_device = [&] { device.copy(a, d1.span(), h1.span()); };
    auto to_host = [&] { device.copy(a, h1.span(), d1.span()); };
    auto both = [&] {
      device.copy(a, d1.span(), h1.span());
      device.copy(b, h2.span(), d2.span());
    };
    auto sync_a = [&] { a.synchronize(); };
    auto sync_ab = [&] {
      a.synchronize();
      b.synchronize();
    };
    const double moved = static_cast<double>(f.bytes) * copies / 1e9;
    for (int r = 0; r <= repeats; ++r) {  // round 0 warms up
      const double td = timed(copies, to_device, sync_a), th = timed(copies, to_host, sync_a), tb = timed(copies, both, sync_ab);
      if (r == 0) continue;
      f.to_device = std::max(f.to_device, moved / td);
      f.to_host = std::max(f.to_host, moved / th);
      f.both = std::max(f.both, 2 * moved / tb);
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace zero
