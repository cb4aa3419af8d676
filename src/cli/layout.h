// Where the ranks of a job run, as the ranks themselves find it: the host, the rank's place among
// the host's ranks (from the communicator's topology, i.e. from MPI, never from a launcher's
// variables), the cores the rank may run on (its affinity mask: what mpirun's binding, Slurm's
// cgroup or taskset gave it) and its OpenMP threads. `zero train` prints it once at start-up, so
// that `zero train --ranks N`, a user's own `mpirun` and `srun` can be compared line by line, and
// warns where the ranks and their threads would share cores.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.h"

namespace zero::cli {

struct RankPlace {
  std::string host;       // gethostname()
  int node = 0;           // the communicator's node index (nodes numbered by their lowest rank)
  int local_rank = 0;     // among the ranks of its node
  int threads = 1;        // OpenMP threads this rank computes with
  std::vector<int> cpus;  // the CPUs its affinity mask allows, ascending
  bool operator==(const RankPlace&) const = default;
};

// This process's (or, for thread ranks, this thread's) place, for communicator `comm`.
RankPlace this_rank_place(const Communicator& comm);

// Every rank's place, in rank order: collective over `comm` (one all_gather_bytes).
std::vector<RankPlace> gather_places(Communicator& comm);

// The layout in a few lines, each ending in '\n': "layout: 4 ranks (mpi) on 2 hosts, 2 ranks per
// host, 1 OpenMP thread per rank, each bound to 1 core", then a line per host (at most 8) with its
// ranks and their cores (ranks listed as CPUs are: "0-3,8").
std::string describe_layout(const std::vector<RankPlace>& places, const std::string& backend);

// Warnings, one line each, without the newline: a host whose ranks run more threads than the
// cores they may use, and ranks bound to cores that another rank of the host is bound to.
std::vector<std::string> layout_warnings(const std::vector<RankPlace>& places);

// "0-3,8,10-11": a CPU list as taskset and Slurm write it.
std::string cpu_list(const std::vector<int>& cpus);

}  // namespace zero::cli
