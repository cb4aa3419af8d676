#include "cli/layout.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "common/error.h"

namespace zero::cli {
namespace {

constexpr std::size_t kHostChars = 64;  // gethostname's names are at most 64 bytes on Linux
constexpr std::size_t kMaxCpus = 1024;  // CPU_SETSIZE

// One rank's place as it travels in all_gather_bytes: fixed size, no pointers.
struct PlaceRecord {
  char host[kHostChars + 1];
  std::int32_t node, local_rank, threads;
  std::uint64_t mask[kMaxCpus / 64];
};

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < static_cast<int>(kMaxCpus); ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

std::string plural(std::size_t n, const char* word) { return cat(n, " ", word, n == 1 ? "" : "s"); }

// The ranks of one host, and the CPUs any of them may use.
struct Host {
  std::string name;
  std::vector<int> ranks;
  std::vector<int> cpus;  // union of the ranks' masks, ascending
};

// The ranks grouped by the communicator's node (two nodes may share a host name: network
// namespaces, containers), in order of their lowest rank.
std::vector<Host> hosts_of(const std::vector<RankPlace>& places) {
  std::vector<Host> hosts;
  std::map<int, std::size_t> index;
  std::map<std::string, int> names;
  for (std::size_t r = 0; r < places.size(); ++r) {
    auto [it, added] = index.try_emplace(places[r].node, hosts.size());
    if (added) {
      hosts.push_back({places[r].host, {}, {}});
      ++names[places[r].host];
    }
    Host& h = hosts[it->second];
    h.ranks.push_back(static_cast<int>(r));
    std::vector<int> merged;
    std::set_union(h.cpus.begin(), h.cpus.end(), places[r].cpus.begin(), places[r].cpus.end(), std::back_inserter(merged));
    h.cpus = std::move(merged);
  }
  for (auto& [node, i] : index) {
    if (names[hosts[i].name] > 1) hosts[i].name += cat(" (node ", node, ")");
  }
  return hosts;
}

// A rank is bound when its mask leaves out some of the CPUs its host's ranks may use.
bool bound(const RankPlace& p, const Host& h) { return p.cpus.size() < h.cpus.size(); }

}  // namespace

std::string cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += cat(out.empty() ? "" : ",", cpus[i]);
    if (j > i) out += cat(j == i + 1 ? "," : "-", cpus[j]);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

RankPlace this_rank_place(const Communicator& comm) {
  RankPlace p;
  char name[kHostChars + 1] = {};
  if (gethostname(name, kHostChars) != 0) std::strcpy(name, "(unknown host)");
  p.host = name;
  p.node = comm.node();
  p.local_rank = comm.local_rank();
  p.threads = omp_get_max_threads();
  p.cpus = allowed_cpus();
  return p;
}

std::vector<RankPlace> gather_places(Communicator& comm) {
  const RankPlace mine = this_rank_place(comm);
  PlaceRecord rec{};
  std::strncpy(rec.host, mine.host.c_str(), kHostChars);
  rec.node = mine.node;
  rec.local_rank = mine.local_rank;
  rec.threads = mine.threads;
  for (int c : mine.cpus) rec.mask[c / 64] |= std::uint64_t{1} << (c % 64);
  std::vector<PlaceRecord> all(static_cast<std::size_t>(comm.size()));
  comm.all_gather_bytes(&rec, sizeof rec, all.data());
  std::vector<RankPlace> places;
  for (const PlaceRecord& r : all) {
    RankPlace p{std::string(r.host, strnlen(r.host, kHostChars)), r.node, r.local_rank, r.threads, {}};
    for (int c = 0; c < static_cast<int>(kMaxCpus); ++c) {
      if (r.mask[c / 64] >> (c % 64) & 1) p.cpus.push_back(c);
    }
    places.push_back(std::move(p));
  }
  return places;
}

std::string describe_layout(const std::vector<RankPlace>& places, const std::string& backend) {
  const std::vector<Host> hosts = hosts_of(places);
  std::size_t fewest = places.size(), most = 0;
  for (const Host& h : hosts) {
    fewest = std::min(fewest, h.ranks.size());
    most = std::max(most, h.ranks.size());
  }
  std::vector<int> threads;
  bool any_bound = false, all_bound = true;
  std::size_t cores_fewest = kMaxCpus, cores_most = 0;
  for (const Host& h : hosts) {
    for (int r : h.ranks) {
      const RankPlace& p = places[static_cast<std::size_t>(r)];
      threads.push_back(p.threads);
      any_bound |= bound(p, h);
      all_bound &= bound(p, h);
      cores_fewest = std::min(cores_fewest, p.cpus.size());
      cores_most = std::max(cores_most, p.cpus.size());
    }
  }
  std::sort(threads.begin(), threads.end());
  const std::string per_host = fewest == most ? cat(plural(most, "rank"), " per host") : cat(fewest, " to ", most, " ranks per host (uneven)");
  const std::string thread_text = threads.front() == threads.back() ? plural(static_cast<std::size_t>(threads.front()), "OpenMP thread")
                                                                    : cat(threads.front(), " to ", threads.back(), " OpenMP threads");
  const std::string cores = cores_fewest == cores_most ? plural(cores_most, "core") : cat(cores_fewest, " to ", cores_most, " cores");
  const std::string binding = all_bound ? cat("each bound to ", cores) : any_bound ? cat("some bound (", cores, " each)") : cat("not bound (each may run on its host's ", cores, ")");
  std::string out = cat("layout: ", plural(places.size(), "rank"), " (", backend, ") on ", plural(hosts.size(), "host"), ", ", per_host, ", ",
                        thread_text, " per rank, ", binding, "\n");
  const std::size_t shown = std::min<std::size_t>(hosts.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) {
    const Host& h = hosts[i];
    out += cat("  host ", h.name, ": ", h.ranks.size() == 1 ? "rank " : "ranks ", cpu_list(h.ranks), ", cpus ", cpu_list(h.cpus));
    if (any_bound && h.ranks.size() <= 8) {
      for (int r : h.ranks) out += cat("; rank ", r, " on ", cpu_list(places[static_cast<std::size_t>(r)].cpus));
    }
    out += "\n";
  }
  if (hosts.size() > shown) out += cat("  ... and ", plural(hosts.size() - shown, "more host"), "\n");
  return out;
}

std::vector<std::string> layout_warnings(const std::vector<RankPlace>& places) {
  std::vector<std::string> out;
  for (const Host& h : hosts_of(places)) {
    std::size_t demand = 0;
    for (int r : h.ranks) demand += static_cast<std::size_t>(places[static_cast<std::size_t>(r)].threads);
    if (demand > h.cpus.size()) {
      out.push_back(cat("warning: [launch] host ", h.name, " runs ", plural(h.ranks.size(), "rank"), " with ", plural(demand, "thread"),
                        " in all on ", plural(h.cpus.size(), "core"), ": the ranks oversubscribe the cores and each runs at a fraction "
                        "of one; start fewer ranks per host, or fewer threads per rank (OMP_NUM_THREADS, forwarded with mpirun -x)"));
    }
    for (std::size_t a = 0; a < h.ranks.size(); ++a) {
      const RankPlace& pa = places[static_cast<std::size_t>(h.ranks[a])];
      if (!bound(pa, h)) continue;
      if (static_cast<std::size_t>(pa.threads) > pa.cpus.size()) {
        out.push_back(cat("warning: [launch] rank ", h.ranks[a], " on ", h.name, " runs ", plural(static_cast<std::size_t>(pa.threads), "OpenMP thread"),
                          " but is bound to ", plural(pa.cpus.size(), "core"), " (", cpu_list(pa.cpus), "): bind it to as many cores as "
                          "threads (mpirun --map-by slot:PE=T --bind-to core, srun --cpus-per-task=T)"));
      }
      for (std::size_t b = a + 1; b < h.ranks.size(); ++b) {
        const RankPlace& pb = places[static_cast<std::size_t>(h.ranks[b])];
        std::vector<int> shared;
        std::set_intersection(pa.cpus.begin(), pa.cpus.end(), pb.cpus.begin(), pb.cpus.end(), std::back_inserter(shared));
        if (bound(pb, h) && !shared.empty()) {
          out.push_back(cat("warning: [launch] ranks ", h.ranks[a], " and ", h.ranks[b], " on ", h.name, " are bound to the same cores (",
                            cpu_list(shared), "): they take turns on them; bind each rank to cores of its own"));
        }
      }
    }
  }
  return out;
}

}  // namespace zero::cli
