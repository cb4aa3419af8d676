// How much memory this host can still give a new run: the kernel's MemAvailable, or what the
// process's memory cgroup still allows when that is lower (a container, a Slurm job), whichever
// binds first. Read before a run allocates, to refuse one that the OOM killer would end.
#pragma once

#include <cstdint>
#include <string>

namespace zero {

struct HostMemory {
  std::uint64_t available = 0;  // bytes
  std::string source;           // where the figure comes from, for messages
};

// The available memory:
//   MemAvailable in /proc/meminfo: free memory plus the page cache and slab the kernel can
//     reclaim without swapping (what "free" shows as available);
//   the cgroup (v2: memory.max less memory.current; v1: memory.limit_in_bytes less
//     memory.usage_in_bytes) of this process and each cgroup above it, with the inactive file
//     cache (memory.stat) counted as available, as the kernel reclaims it before the cgroup's
//     OOM killer acts;
// the least of them. Files are read under `root` (empty: "/"); ZERO_HOST_ROOT in the environment
// names another root, so tests can present a host of any size. zero::Error when /proc/meminfo has
// no MemAvailable (Linux before 3.14).
HostMemory host_memory(std::string root = "");

// The cgroup part alone: the least room left over the cgroups of this process under `root`, with
// the file it came from; available = UINT64_MAX when no cgroup sets a limit.
HostMemory cgroup_memory(const std::string& root);

}  // namespace zero
