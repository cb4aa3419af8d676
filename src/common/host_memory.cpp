#include "common/host_memory.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "common/error.h"

namespace zero {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

// The first number in the file, or nullopt when it is missing, unreadable or says "max".
std::optional<std::uint64_t> read_number(const fs::path& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    return std::stoull(word);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// `key`'s value in a "key value" file (memory.stat), or 0.
std::uint64_t stat_value(const fs::path& path, const std::string& key) {
  std::ifstream in(path);
  std::string k;
  std::uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

// The cgroup paths of this process by hierarchy: "" for v2's unified one, "memory" for v1's.
std::vector<std::pair<std::string, std::string>> own_cgroups(const std::string& root) {
  std::ifstream in(root + "/proc/self/cgroup");
  std::vector<std::pair<std::string, std::string>> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) out.emplace_back("", path);
    std::stringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');)
      if (c == "memory") out.emplace_back("memory", path);
  }
  return out;
}

struct Limits {  // one cgroup hierarchy's file names
  const char* limit;
  const char* usage;
  const char* inactive_file;  // in memory.stat
};

// The room left in `dir`'s cgroup, if it sets a limit: limit - (usage - inactive file cache).
void consider(const fs::path& dir, const Limits& names, HostMemory& best) {
  const auto limit = read_number(dir / names.limit);
  if (!limit || *limit >= (std::uint64_t{1} << 60)) return;  // v1 writes "no limit" as ~2^63
  const std::uint64_t usage = read_number(dir / names.usage).value_or(0);
  const std::uint64_t inactive = stat_value(dir / "memory.stat", names.inactive_file);
  const std::uint64_t used = usage - std::min(usage, inactive);
  const std::uint64_t room = *limit - std::min(*limit, used);
  if (room < best.available) {
    best.available = room;
    best.source = cat("the cgroup limit ", (dir / names.limit).string(), " (", *limit, " bytes) less what the cgroup uses (",
                      used, " bytes, its inactive file cache not counted)");
  }
}

// Every cgroup from this process's up to the hierarchy's root, as far as they are visible under
// `mount` (inside a container only its own cgroup and those below it are).
void walk(const fs::path& mount, const std::string& own, const Limits& names, HostMemory& best) {
  fs::path dir = mount / fs::path(own).relative_path();
  while (true) {
    std::error_code ec;
    if (fs::is_directory(dir, ec)) consider(dir, names, best);
    if (dir == mount || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
    if (dir.string().size() < mount.string().size()) break;
  }
}

}  // namespace

HostMemory cgroup_memory(const std::string& root) {
  HostMemory best{kUnlimited, ""};
  const Limits v2{"memory.max", "memory.current", "inactive_file"};
  const Limits v1{"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"};
  for (const auto& [hierarchy, own] : own_cgroups(root)) {
    if (hierarchy.empty()) {
      walk(fs::path(root + "/sys/fs/cgroup"), own, v2, best);
      walk(fs::path(root + "/sys/fs/cgroup/unified"), own, v2, best);
    } else {
      walk(fs::path(root + "/sys/fs/cgroup/memory"), own, v1, best);
    }
  }
  return best;
}

HostMemory host_memory(std::string root) {
  if (root.empty()) {
    const char* env = std::getenv("ZERO_HOST_ROOT");
    if (env) root = env;
  }
  std::ifstream in(root + "/proc/meminfo");
  std::string key, unit;
  std::uint64_t kib = 0;
  std::optional<std::uint64_t> available;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") available = kib * 1024;
  }
  if (!available) {
    throw Error(cat("[memory] ", root, "/proc/meminfo has no MemAvailable line (Linux 3.14 or later gives it), so zero cannot "
                    "check that this run fits the host's memory: run on a newer kernel"));
  }
  HostMemory mem{*available, cat("MemAvailable in ", root, "/proc/meminfo")};
  const HostMemory cgroup = cgroup_memory(root);
  if (cgroup.available < mem.available) {
    return {cgroup.available, cat(cgroup.source, ", which is less than the host's ", mem.source, " (", mem.available, " bytes)")};
  }
  mem.source += cgroup.source.empty() ? "; no memory cgroup of this process sets a lower limit"
                                      : cat("; the cgroup allows more (", cgroup.source, ")");
  return mem;
}

}  // namespace zero
