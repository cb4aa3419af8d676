#include "cli/launch.h"

#include <cblas.h>
#include <omp.h>

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include "backends/registry.h"
#include "cli/hostfile.h"
#include "cli/stop_signal.h"
#include "comm/thread_world.h"
#include "common/error.h"

namespace zero::cli {
namespace {

// The cores this process may run on (its affinity mask: what Slurm, taskset or a container's
// cpuset allow), counted as hardware threads.
int usable_hardware_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void check_launch_size(const Flags& flags, long long n) {
  if (flags.has("hostfile")) {  // across machines: the hostfile's slots, not this machine's cores
    const auto hosts = read_hostfile(flags.get("hostfile"));
    long long slots = 0;
    for (const HostSlots& h : hosts) slots += h.slots;
    if (n > slots && !flags.has("oversubscribe")) {
      throw ConfigError(cat("[cli] --ranks ", n, " but hostfile ", flags.get("hostfile"), " has ", slots, " slot(s) on ", hosts.size(),
                            " host(s): use --ranks ", slots, " or fewer, add slots=K to its hosts, or add --oversubscribe to start them anyway"));
    }
    check_hosts_reachable(hosts, static_cast<int>(flags.get_int("host-timeout", 1, 3600)), flags.get("hostfile"));
    return;
  }
  const int threads = usable_hardware_threads();
  const long long most = static_cast<long long>(kRanksPerHardwareThread) * threads;
  if (n <= most || flags.has("oversubscribe")) return;
  throw ConfigError(cat("[cli] --ranks ", n, " would start ", n, " processes on this machine (hardware threads this run may use: ",
                        threads, "); zero starts at most ", kRanksPerHardwareThread,
                        " ranks per hardware thread (", most, " here), because every rank holds its own copy of the model "
                        "and data, and beyond that the ranks mostly wait for a turn on a core. Use --ranks ", most, " or fewer, run across machines (mpirun -np ", n,
                        " --hostfile FILE zero ...), or add --oversubscribe to start them anyway"));
}

// Inside a Slurm allocation (sbatch, salloc), --ranks beyond the tasks it granted would have
// mpirun oversubscribe the allocation's cores silently (zero starts mpirun with --oversubscribe).
void check_slurm_tasks(const Flags& flags, long long n) {
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* tasks = std::getenv("SLURM_NTASKS");
  if (!job || !tasks || flags.has("oversubscribe")) return;
  const long long granted = std::atoll(tasks);
  if (granted <= 0 || n <= granted) return;
  throw ConfigError(cat("[cli] --ranks ", n, " but this Slurm allocation (job ", job, ") has ", granted, " task(s) (SLURM_NTASKS): use --ranks ",
                        granted, " or fewer, ask Slurm for more (sbatch -n ", n, "), or add --oversubscribe to start them anyway"));
}

// --ranks-per-node, for the commands that take it: thread ranks as nodes (0: one node).
int thread_ranks_per_node(const Flags& flags, int n) {
  if (!flags.declares("ranks-per-node") || !flags.has("ranks-per-node")) return 0;
  return static_cast<int>(flags.get_int("ranks-per-node", 1, n));
}

// OMP_NUM_THREADS as the user set it (its first number: a list sets nested levels), or none.
// A value that is not a positive number is refused: OpenMP would ignore it with a warning.
std::optional<int> user_omp_threads() {
  const char* v = std::getenv("OMP_NUM_THREADS");
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (end == v || (*end != '\0' && *end != ',') || n < 1 || n > 4096) {
    throw ConfigError(cat("[cli] OMP_NUM_THREADS is '", v, "': give a positive number of OpenMP threads per rank, or unset it"));
  }
  return static_cast<int>(n);
}

}  // namespace

int run_ranks(const Flags& flags, const std::function<int(Communicator&, Ledger&)>& per_rank) {
  std::string backend = flags.get("comm");
  int launched = 1;
  if (backend == "auto") backend = launched_by_mpi(&launched) && launched > 1 ? "mpi" : "threads";

  if (backend == "threads") {
    const int n = static_cast<int>(flags.get_int("ranks", 1, 1024));
    std::vector<int> codes(n, 0);
    ThreadWorld world(n, {}, thread_ranks_per_node(flags, n));
    // The ranks share this process's cores: each takes the user's OMP_NUM_THREADS where set (as
    // each process does under mpirun), else an equal share of the cores; OpenBLAS (one pool for
    // the whole process) stays single-threaded, or the ranks' threads would oversubscribe the cores.
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int threads = user_omp_threads().value_or(std::max(1, cores / n));
    if (n > 1) openblas_set_num_threads(1);
    world.run([&](int r) {
      omp_set_num_threads(threads);
      Ledger ledger;
      auto comm = world.communicator(r, &ledger);
      codes[r] = per_rank(*comm, ledger);
    });
    return codes[0];
  }

  Ledger ledger;
  CommOptions options;
  options.ledger = &ledger;
  auto comm = make_named_communicator(backend, options);
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
  // (only the commands that relaunch have the flag)
  if (relaunches && flags.has("hostfile") && !(flags.get("comm") == "auto" && !under_mpi && flags.get_int("ranks", 1, 4096) > 1)) {
    throw ConfigError(cat("[cli] --hostfile is for zero's own launcher (--ranks N with N > 1, outside mpirun): ",
                          under_mpi ? "this process already runs under mpirun, so give the hostfile to mpirun (mpirun --hostfile FILE)"
                                    : "add --ranks N, or drop --hostfile"));
  }
  const std::string comm = flags.get("comm");
  if (comm == "threads") {
    const int n = static_cast<int>(flags.get_int("ranks", 1, 1024));
    thread_ranks_per_node(flags, n);  // checked before any rank starts
    return {n, "threads"};
  }
  if (flags.declares("ranks-per-node") && flags.has("ranks-per-node")) {
    throw ConfigError("[cli] --ranks-per-node arranges thread ranks as nodes (--comm threads); under MPI the nodes are the machines "
                      "the ranks run on: drop it, or add --comm threads");
  }
  const bool device_comm = backend_of_communicator(comm) != nullptr;  // one device per process, bootstrapped over mpi
  if (comm == "mpi" || device_comm || (comm == "auto" && under_mpi)) {
    const int size = under_mpi ? launched : 1;
    if (flags.has("ranks") && flags.get_int("ranks", 1, 1 << 20) != size) {
      throw ConfigError(cat("[cli] --ranks ", flags.get("ranks"), " but the mpi job has ", size,
                            " ranks: drop --ranks, or launch with mpirun -np ", flags.get("ranks")));
    }
    return {size, device_comm ? comm : "mpi"};
  }
  if (comm == "auto" && relaunches) {
    const int n = static_cast<int>(flags.get_int("ranks", 1, 4096));
    if (n > 1) check_slurm_tasks(flags, n);
    if (n > 1) check_launch_size(flags, n);
    return {n, n > 1 ? "mpi" : "threads"};  // more than one: relaunched under mpirun
  }
  if (comm == "auto") return {static_cast<int>(flags.get_int("ranks", 1, 1024)), "threads"};
  throw ConfigError(cat("[comm] unknown backend '", comm, "' for --comm: use auto, threads, mpi or ", device_communicator_names(), " (GPU build)"));
}

bool wants_mpi_job(const Flags& flags) {
  int launched = 1;
  const bool under_mpi = launched_by_mpi(&launched) && launched > 1;
  return flags.get("comm") == "auto" && !under_mpi && flags.get_int("ranks", 1, 4096) > 1;
}

namespace {

// The words after the executable: the command, the user's arguments without --ranks, --comm and
// --hostfile (the job is MPI, placed by mpirun), and --comm mpi.
std::vector<std::string> rank_arguments(const std::vector<std::string>& command, const std::vector<std::string>& args) {
  std::vector<std::string> out = command;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--ranks" || a == "--comm" || a == "--hostfile" || a == "--host-timeout") {
      ++i;
      continue;
    }
    if (a.rfind("--ranks=", 0) == 0 || a.rfind("--comm=", 0) == 0 || a.rfind("--hostfile=", 0) == 0 || a.rfind("--host-timeout=", 0) == 0) continue;
    out.push_back(a);
  }
  out.insert(out.end(), {"--comm", "mpi"});
  return out;
}

}  // namespace

int relaunch_under_mpirun(const Flags& flags, const std::vector<std::string>& command, const std::vector<std::string>& args) {
  const long long n = flags.get_int("ranks", 1, 4096);
  std::vector<std::string> cmd = {"mpirun", "--oversubscribe", "-np", std::to_string(n)};
  if (geteuid() == 0) cmd.insert(cmd.begin() + 1, "--allow-run-as-root");
  std::vector<HostSlots> hosts;
  if (flags.has("hostfile")) {
    hosts = read_hostfile(flags.get("hostfile"));
    // the ranks on other hosts get the threads set below (mpirun forwards OMPI_MCA_* itself,
    // not these)
    cmd.insert(cmd.end(), {"--hostfile", flags.get("hostfile"), "-x", "OMP_NUM_THREADS", "-x", "OPENBLAS_NUM_THREADS"});
  }
  // The lock on --save's directory stays with this process, which waits for its child mpirun; the
  // ranks are told who holds it (checkpoint/directory.h), on other hosts too.
  if (std::getenv("ZERO_SAVE_LOCK_HOLDER")) cmd.insert(cmd.end(), {"-x", "ZERO_SAVE_LOCK_HOLDER"});
  // Placement: each rank bound to hardware threads of its own, as many as its OpenMP threads
  // (counted as the affinity mask counts them, hence --use-hwthread-cpus); more ranks than
  // hardware threads are not bound at all (they take turns on every core). The line printed says
  // which, so that a user's own mpirun can do the same or otherwise. With a hostfile, every host
  // is taken to have this machine's hardware threads (binding on a smaller one fails in mpirun,
  // which says so) and its busiest host's ranks share them.
  const long long per_host = hosts.empty() ? n : most_ranks_on_one_host(hosts, n);
  const long long per_rank = usable_hardware_threads() / per_host;
  const std::string threads = std::to_string(std::max<long long>(1, per_rank));
  const std::vector<std::string> placement = per_rank >= 1
      ? std::vector<std::string>{"--use-hwthread-cpus", "--map-by", cat("slot:PE=", per_rank), "--bind-to", "hwthread"}
      : std::vector<std::string>{"--bind-to", "none"};
  cmd.insert(cmd.end(), placement.begin(), placement.end());
  cmd.push_back(std::filesystem::read_symlink("/proc/self/exe").string());
  const std::vector<std::string> rest = rank_arguments(command, args);
  cmd.insert(cmd.end(), rest.begin(), rest.end());
  std::string shown = cat("mpirun -np ", n, hosts.empty() ? "" : " --hostfile " + flags.get("hostfile"));
  for (const std::string& p : placement) shown += " " + p;
  std::printf("launch: %s, OMP_NUM_THREADS=%s%s\n", shown.c_str(), std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : threads.c_str(),
              per_rank >= 1 ? "" : " (more ranks than hardware threads: not bound)");
  setenv("OMP_NUM_THREADS", threads.c_str(), 0);
  setenv("OPENBLAS_NUM_THREADS", threads.c_str(), 0);
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  std::vector<char*> argv;
  for (auto& s : cmd) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  // mpirun runs as a child, not in this process's place: this process stays to forward a stop
  // request as the signal mpirun passes on to the ranks (stop_signal.h), and returns its exit code.
  const pid_t parent = ::getpid();
  ::signal(SIGCHLD, SIG_DFL);  // an ignored SIGCHLD (inherited) would make waitpid fail with ECHILD
  const pid_t child = ::fork();
  if (child < 0) throw Error(cat("[cli] could not start mpirun: fork failed (", std::strerror(errno), ")"));
  if (child == 0) {
    // This process's stop handlers are not mpirun's: until the exec a forwarded request (or the
    // death signal below) would be caught here and lost with the exec, and mpirun would run on.
    for (int s : {SIGTERM, SIGUSR1, SIGINT, SIGHUP}) ::signal(s, SIG_DFL);
    ::setpgid(0, 0);  // a signal to the launching process's group reaches mpirun only as forwarded
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // this process killed (SIGKILL): mpirun ends the job
    if (::getppid() != parent) _exit(1);
    execvp("mpirun", argv.data());
    std::fprintf(stderr, "zero: [cli] could not start mpirun (is Open MPI installed? run scripts/setup.sh), or run under mpirun yourself\n");
    _exit(127);
  }
  ::setpgid(child, child);  // here too: whichever of the two runs first
  forward_stop_signals(child);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno == EINTR) continue;
    throw Error(cat("[cli] lost track of mpirun (pid ", child, "): waitpid failed (", std::strerror(errno), "); the job's outcome is unknown"));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace zero::cli
