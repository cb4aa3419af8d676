#include "cli/launch.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "comm/thread_world.h"
#include "common/error.h"

namespace zero::cli {

int run_ranks(const Flags& flags, const std::function<int(Communicator&, Ledger&)>& per_rank) {
  std::string backend = flags.get("comm");
  int launched = 1;
  if (backend == "auto") backend = launched_by_mpi(&launched) && launched > 1 ? "mpi" : "threads";

  if (backend == "threads") {
    const int n = static_cast<int>(flags.get_int("ranks", 1, 1024));
    std::vector<int> codes(n, 0);
    ThreadWorld world(n);
    // The ranks share this process's cores: split them, and keep OpenBLAS (one pool for the
    // whole process) single-threaded, or the ranks' threads would oversubscribe the cores.
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (n > 1) openblas_set_num_threads(1);
    world.run([&](int r) {
      omp_set_num_threads(std::max(1, cores / n));
      Ledger ledger;
      auto comm = world.communicator(r, &ledger);
      codes[r] = per_rank(*comm, ledger);
    });
    return codes[0];
  }

  Ledger ledger;
  CommOptions options;
  options.ledger = &ledger;
  auto comm = make_communicator(backend, options);
  if (flags.has("ranks") && flags.get_int("ranks", 1, 1 << 20) != comm->size()) {
    throw ConfigError(cat("[cli] --ranks ", flags.get("ranks"), " but the ", backend, " job has ", comm->size(),
                          " ranks: drop --ranks, or launch with mpirun -np ", flags.get("ranks")));
  }
  try {
    return per_rank(*comm, ledger);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zero: [rank %d of %d] %s\n", comm->rank(), comm->size(), e.what());
    std::fflush(stderr);
    if (comm->size() > 1) comm->abort(1);  // the other ranks may be waiting in a collective
    throw;
  }
}

}  // namespace zero::cli
