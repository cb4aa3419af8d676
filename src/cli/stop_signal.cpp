#include "cli/stop_signal.h"

#include <signal.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>

namespace zero::cli {
namespace {

// Lock-free atomics: the only state a handler may touch (and clock_gettime, kill and raise, which
// POSIX lists as async-signal-safe).
std::atomic<std::int64_t> first_ns{0};  // monotonic time of the first request; 0: none yet
std::atomic<int> first_signal{0};
std::atomic<pid_t> forward_to{0};       // mpirun's pid in the launching process; 0 in a rank
std::atomic<bool> forwarded_kill{false};
static_assert(std::atomic<std::int64_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

std::int64_t now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec + 1;  // never 0
}

// In the launching process: `sig` to mpirun, which kills the job on it; once, since a second
// SIGINT/SIGTERM/SIGHUP within 5 s makes Open MPI's mpirun exit without killing its ranks.
void kill_job(int sig) {
  const pid_t child = forward_to.load();
  if (child > 0 && !forwarded_kill.exchange(true)) ::kill(child, sig);
}

void on_kill_signal(int sig) {
  const int saved_errno = errno;
  kill_job(sig);
  errno = saved_errno;
}

// A second request: in a rank, the signal's default action now; in the launching process, one
// SIGTERM to mpirun, which then kills the ranks.
void stop_now(int sig) {
  if (forward_to.load() > 0) return kill_job(SIGTERM);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void on_stop_signal(int sig) {
  const int saved_errno = errno;
  const std::int64_t now = now_ns();
  std::int64_t none = 0;
  if (first_ns.compare_exchange_strong(none, now)) {
    first_signal.store(sig);
    const pid_t child = forward_to.load();
    if (child > 0) ::kill(child, SIGUSR1);
  } else if (now - first_ns.load() >= static_cast<std::int64_t>(kRepeatWindowSeconds * 1e9)) {
    stop_now(sig);
  }
  errno = saved_errno;
}

void handle(int sig, void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGTERM);  // one handler at a time in a thread
  sigaddset(&sa.sa_mask, SIGUSR1);
  sa.sa_flags = SA_RESTART;  // the other threads' reads and writes go on
  ::sigaction(sig, &sa, nullptr);
}

}  // namespace

void install_stop_handlers() {
  handle(SIGTERM, on_stop_signal);
  handle(SIGUSR1, on_stop_signal);
}

int stop_signal() { return first_ns.load() != 0 ? first_signal.load() : 0; }

const char* stop_signal_name(int signal) {
  if (signal == SIGTERM) return "SIGTERM";
  if (signal == SIGUSR1) return "SIGUSR1";
  static char other[32];
  std::snprintf(other, sizeof other, "signal %d", signal);
  return other;
}

void forward_stop_signals(pid_t child) {
  forward_to.store(child);
  install_stop_handlers();
  handle(SIGINT, on_kill_signal);  // Ctrl-C: the job stops now
  handle(SIGHUP, on_kill_signal);  // the terminal went away
  if (first_ns.load() != 0) ::kill(child, SIGUSR1);  // arrived before mpirun started
}

}  // namespace zero::cli
