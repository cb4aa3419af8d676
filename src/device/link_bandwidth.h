// The host<->device link's copy bandwidth as the engine's offload copies see it: Device::copy
// between a pinned host-tier buffer and a device-tier buffer, on the copy stream (and, for both
// directions at once, the host stream for the second), timed from issue to synchronize.
#pragma once

#include <cstddef>
#include <vector>

#include "device/device.h"

namespace zero {

struct LinkFigure {
  std::size_t bytes = 0;      // one copy
  double to_device = 0;       // GB/s (1e9 bytes per second), host -> device
  double to_host = 0;         // device -> host
  double both = 0;            // both directions at once, the two added
  bool pinned = false;        // the host buffers were page-locked (pin() succeeded)
};

// One figure per size in `sizes` (bytes), each the best of `repeats` timed rounds of enough
// copies to move at least 256 MiB (after one untimed round).
std::vector<LinkFigure> measure_link(Device& device, const std::vector<std::size_t>& sizes, int repeats = 3);

}  // namespace zero
