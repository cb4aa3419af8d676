// Preemption: clusters stop a job with SIGTERM (Slurm, Kubernetes) or SIGUSR1 a while before they
// SIGKILL it. The first such signal only records a request (the handler sets an atomic, which is
// all a signal handler may safely do); the training loop reads it at each step boundary, the
// ranks agree on it in that step's collective, and all of them stop after the same step, save
// and exit with kExitPreempted. A second signal stops the process at once: its default action.
//
// Copies of one request are not a second request: a scheduler that signals every process of a
// job reaches a rank directly and again through mpirun (which forwards SIGUSR1), a few
// milliseconds apart. A repeat within kRepeatWindowSeconds of the first signal is therefore
// ignored; a later one is the second signal.
#pragma once

#include <sys/types.h>

namespace zero::cli {

// The exit code of a run that stopped on SIGTERM/SIGUSR1 after a step and published a checkpoint
// to resume from: EX_TEMPFAIL of sysexits.h ("temporary failure; the user is invited to retry"),
// distinct from 0 (done), 1 (an error), 2 (usage) and 3 (an internal error). A run without --save
// that stops this way exits 128 + the signal's number, as a shell reports a process the signal
// ended: there is nothing to resume.
inline constexpr int kExitPreempted = 75;
inline constexpr double kRepeatWindowSeconds = 2.0;

// SIGTERM and SIGUSR1 record a stop request (as above) instead of ending the process.
void install_stop_handlers();

// The first stop signal's number, or 0 while none has arrived. Async-signal-safe reads only.
int stop_signal();

// "SIGTERM", "SIGUSR1" (or "signal N").
const char* stop_signal_name(int signal);

// For the process that started mpirun as `child` (in a process group of its own, so that a
// signal to this process's group, as from Ctrl-C or `timeout`, reaches mpirun only through
// here): a stop request is forwarded to it as SIGUSR1, which mpirun forwards to every rank (Open
// MPI's mpirun answers SIGTERM by killing the job within about two seconds, with no time to
// save); a second request as SIGTERM, and SIGINT or SIGHUP as themselves, which kill the job:
// one of these only (a second within 5 s makes mpirun exit without killing its ranks). A request
// recorded before the call is forwarded now.
void forward_stop_signals(pid_t child);

}  // namespace zero::cli
