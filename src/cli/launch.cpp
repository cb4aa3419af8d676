#include "cli/launch.h"

#include <cblas.h>
#include <omp.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
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
    if (comm->size() == 1) throw;  // main prints it
    std::fprintf(stderr, "zero: [rank %d of %d] %s\n", comm->rank(), comm->size(), e.what());
    std::fflush(stderr);
    comm->abort(1);  // the other ranks may be waiting in a collective
  }
  return 1;  // not reached: abort does not return
}

PlannedWorld planned_world(const Flags& flags, bool relaunches) {
  int launched = 1;
  const bool under_mpi = launched_by_mpi(&launched) && launched > 1;
  const std::string comm = flags.get("comm");
  if (comm == "threads") return {static_cast<int>(flags.get_int("ranks", 1, 1024)), "threads"};
  if (comm == "mpi" || comm == "nccl" || (comm == "auto" && under_mpi)) {
    const int size = under_mpi ? launched : 1;
    if (flags.has("ranks") && flags.get_int("ranks", 1, 1 << 20) != size) {
      throw ConfigError(cat("[cli] --ranks ", flags.get("ranks"), " but the mpi job has ", size,
                            " ranks: drop --ranks, or launch with mpirun -np ", flags.get("ranks")));
    }
    return {size, comm == "nccl" ? "nccl" : "mpi"};  // nccl: one GPU per process, bootstrapped over mpi
  }
  if (comm == "auto" && relaunches) {
    const int n = static_cast<int>(flags.get_int("ranks", 1, 4096));
    return {n, n > 1 ? "mpi" : "threads"};  // more than one: relaunched under mpirun
  }
  if (comm == "auto") return {static_cast<int>(flags.get_int("ranks", 1, 1024)), "threads"};
  throw ConfigError(cat("[comm] unknown backend '", comm, "' for --comm: use auto, threads, mpi or nccl (GPU build)"));
}

bool wants_mpi_job(const Flags& flags) {
  int launched = 1;
  const bool under_mpi = launched_by_mpi(&launched) && launched > 1;
  return flags.get("comm") == "auto" && !under_mpi && flags.get_int("ranks", 1, 4096) > 1;
}

void relaunch_under_mpirun(const Flags& flags, const std::vector<std::string>& command, const std::vector<std::string>& args) {
  const long long n = flags.get_int("ranks", 1, 4096);
  std::vector<std::string> cmd = {"mpirun", "--oversubscribe", "-np", std::to_string(n)};
  if (geteuid() == 0) cmd.insert(cmd.begin() + 1, "--allow-run-as-root");
  cmd.push_back(std::filesystem::read_symlink("/proc/self/exe").string());
  // The lock on --save's directory stays with this process (it becomes mpirun); its ranks are
  // told who holds it (checkpoint/directory.h), on other hosts too.
  if (std::getenv("ZERO_SAVE_LOCK_HOLDER")) cmd.insert(cmd.end() - 1, {"-x", "ZERO_SAVE_LOCK_HOLDER"});
  cmd.insert(cmd.end(), command.begin(), command.end());
  for (std::size_t i = 0; i < args.size(); ++i) {  // drop --ranks and --comm; the job is MPI
    const std::string& a = args[i];
    if (a == "--ranks" || a == "--comm") {
      ++i;
      continue;
    }
    if (a.rfind("--ranks=", 0) == 0 || a.rfind("--comm=", 0) == 0) continue;
    cmd.push_back(a);
  }
  cmd.insert(cmd.end(), {"--comm", "mpi"});
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string threads = std::to_string(std::max<long long>(1, cores / n));
  setenv("OMP_NUM_THREADS", threads.c_str(), 0);
  setenv("OPENBLAS_NUM_THREADS", threads.c_str(), 0);
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  std::vector<char*> argv;
  for (auto& s : cmd) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp("mpirun", argv.data());
  throw Error("[cli] could not start mpirun (is Open MPI installed? run scripts/setup.sh), or run under mpirun yourself");
}

}  // namespace zero::cli
