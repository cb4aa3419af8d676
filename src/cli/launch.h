// Runs a per-rank function on the world the flags ask for: N in-process thread ranks, or this
// process's rank of an MPI job (under mpirun). Errors end every rank with a message.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/flags.h"
#include "comm/communicator.h"
#include "memory/ledger.h"

namespace zero::cli {

// Reads --comm (threads | mpi | auto) and --ranks. Returns rank 0's exit code. Under MPI an
// error on any rank is printed by that rank and aborts the whole job (non-zero exit, no hang).
// Each rank gets its ledger, which its communicator's scratch is also accounted in.
int run_ranks(const Flags& flags, const std::function<int(Communicator&, Ledger&)>& per_rank);

// For `--ranks N` outside mpirun: runs `mpirun -np N zero <command> <args>` (without --ranks and
// --comm, plus --comm mpi) as a child, giving each rank cores / N OpenMP and OpenBLAS threads,
// forwards SIGTERM/SIGUSR1 to it as a stop request (stop_signal.h), and returns its exit code
// (128 + the signal's number if a signal ended it). Throws if it cannot fork; exit 127 if
// mpirun cannot be started.
int relaunch_under_mpirun(const Flags& flags, const std::vector<std::string>& command, const std::vector<std::string>& args);

// How many ranks zero starts on one machine, at most, per hardware thread this process may use
// (--oversubscribe lifts it): beyond that the ranks mostly wait for a core.
inline constexpr int kRanksPerHardwareThread = 4;

// The world the flags ask for, as the launching process sees it before any rank starts: its size
// (--ranks, or the size of the mpirun job this process is part of) and its backend. Commands use
// it to check their whole input once, before relaunch_under_mpirun or run_ranks. `relaunches`:
// the command starts mpirun itself for --ranks > 1 with --comm auto (train, bench train); the
// others run such ranks as threads. ConfigError for an unknown --comm, a --ranks that disagrees
// with the mpirun job, or (for a command that relaunches) more than kRanksPerHardwareThread
// ranks per usable hardware thread without --oversubscribe, which such a command must accept.
struct PlannedWorld {
  int size = 1;
  std::string backend = "threads";  // threads or mpi
};
PlannedWorld planned_world(const Flags& flags, bool relaunches);

// True when --comm is auto, this process was not started by mpirun, and --ranks asks for more
// than one rank: the case for relaunch_under_mpirun.
bool wants_mpi_job(const Flags& flags);

}  // namespace zero::cli
