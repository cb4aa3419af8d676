// `zero bench offload --device D`: the host<->device link's copy bandwidth through the seam
// (device/link_bandwidth.h), at the sizes offload copies, against the best this link reached.
#include <algorithm>
#include <cstdio>

#include "backends/registry.h"
#include "cli/bench_offload.h"
#include "device/link_bandwidth.h"

namespace zero::cli {

void print_link_bandwidth(const std::string& device_name) {
  Ledger ledger;
  auto device = make_device(device_name, ledger);
  const std::vector<std::size_t> sizes = {std::size_t{1} << 20, std::size_t{16} << 20, std::size_t{64} << 20, std::size_t{256} << 20,
                                          std::size_t{1} << 30};
  const std::vector<LinkFigure> figures = measure_link(*device, sizes);
  double peak_d = 0, peak_h = 0;
  for (const LinkFigure& f : figures) peak_d = std::max(peak_d, f.to_device), peak_h = std::max(peak_h, f.to_host);
  std::printf("\nzero bench offload: the %s device's host<->device copies (Device::copy on the copy stream, pinned host memory: %s)\n\n",
              device_name.c_str(), figures.empty() || figures[0].pinned ? "yes" : "NO, pageable");
  std::printf("%12s %14s %8s %14s %8s %16s\n", "copy", "to device GB/s", "of peak", "to host GB/s", "of peak", "both at once GB/s");
  for (const LinkFigure& f : figures) {
    std::printf("%9.0f MiB %14.2f %7.0f%% %14.2f %7.0f%% %16.2f\n", static_cast<double>(f.bytes) / (1 << 20), f.to_device,
                100 * f.to_device / peak_d, f.to_host, 100 * f.to_host / peak_h, f.both);
  }
  std::printf("\nlink peak (the best measured above): %.2f GB/s to the device, %.2f GB/s to the host\n", peak_d, peak_h);
}

}  // namespace zero::cli
