#include "common/mapped_file.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/error.h"

namespace zero {
namespace {

// The read in progress on this thread: where a SIGBUS in [lo, hi) jumps back to.
struct GuardedRead {
  sigjmp_buf jump;
  const unsigned char* lo;
  const unsigned char* hi;
};
thread_local GuardedRead* t_read = nullptr;

struct sigaction g_previous {};  // the handler before ours: a SIGBUS not in a guarded read goes there

void on_sigbus(int signal, siginfo_t* info, void* context) {
  const auto* at = static_cast<const unsigned char*>(info->si_addr);
  if (t_read && at >= t_read->lo && at < t_read->hi) siglongjmp(t_read->jump, 1);
  // Not ours: what would have happened without this handler.
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(signal, info, context);
  } else if (g_previous.sa_handler != SIG_IGN && g_previous.sa_handler != SIG_DFL) {
    g_previous.sa_handler(signal);
  } else {
    ::signal(SIGBUS, SIG_DFL);  // the faulting access runs again and ends the process as it would have
  }
}

// Installed at a read, not at start-up, and again if someone replaced it since: MPI_Init installs
// its own SIGBUS handler (a back trace), which ours then passes other faults on to.
std::mutex g_install;

bool ours(const struct sigaction& action) { return (action.sa_flags & SA_SIGINFO) && action.sa_sigaction == on_sigbus; }

void ensure_handler() {
  struct sigaction current {};
  ::sigaction(SIGBUS, nullptr, &current);
  if (ours(current)) return;
  const std::lock_guard<std::mutex> lock(g_install);
  ::sigaction(SIGBUS, nullptr, &current);
  if (ours(current)) return;
  struct sigaction action {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, &g_previous);
}

std::string describe(std::uint64_t size, const timespec& mtime) {
  char when[64];
  std::tm tm{};
  gmtime_r(&mtime.tv_sec, &tm);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  return cat(size, " bytes, modified ", when, ".", mtime.tv_nsec / 1000000, " UTC");
}

}  // namespace

MappedFile::MappedFile(const InputFile& file) : file_(file), fd_(open_input_file(file)) {
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) {
    throw Error(cat("[", file_.component, "] ", file_.role, " ", file_.path, " cannot be examined: ", std::strerror(errno)));
  }
  ZERO_CHECK(st.st_size > 0, file_.path, " is empty: read it instead of mapping it");
  size_ = static_cast<std::uint64_t>(st.st_size);
  mtime_ = st.st_mtim;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_.get(), 0);
  if (p == MAP_FAILED) {
    throw Error(cat("[", file_.component, "] ", file_.role, " ", file_.path, " cannot be memory-mapped: ", std::strerror(errno),
                    "; copy it to a local file system"));
  }
  data_ = static_cast<unsigned char*>(p);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

void MappedFile::fail_changed(const std::string& now) const {
  throw Error(cat("[", file_.component, "] ", file_.role, " ", file_.path, " changed while this run was reading it (",
                  describe(size_, mtime_), " when the run opened it; now ", now,
                  "). A run reads its data from the file, one copy shared by the ranks of a host: to change the data, "
                  "write a new file and rename it over the old one (a running job keeps reading the old one), or stop "
                  "the run first; resume with --resume from the last checkpoint"));
}

void MappedFile::check_unchanged() const {
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) fail_changed(cat("it cannot be examined: ", std::strerror(errno)));
  const bool same_time = st.st_mtim.tv_sec == mtime_.tv_sec && st.st_mtim.tv_nsec == mtime_.tv_nsec;
  if (static_cast<std::uint64_t>(st.st_size) != size_ || !same_time) {
    fail_changed(describe(static_cast<std::uint64_t>(st.st_size), st.st_mtim));
  }
}

void MappedFile::read(const std::function<void()>& copy) const {
  ensure_handler();
  check_unchanged();
  GuardedRead guard;
  guard.lo = data_;
  guard.hi = data_ + size_ + static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));  // the last page's tail faults too
  GuardedRead* const outer = t_read;
  if (sigsetjmp(guard.jump, 1) != 0) {  // SIGBUS: the file shrank under the copy
    t_read = outer;
    struct stat st {};
    fail_changed(::fstat(fd_.get(), &st) == 0 ? describe(static_cast<std::uint64_t>(st.st_size), st.st_mtim)
                                              : std::string("it cannot be examined"));
  }
  t_read = &guard;
  try {
    copy();
  } catch (...) {  // an error the copy found (a bad header): this read is over all the same
    t_read = outer;
    throw;
  }
  t_read = outer;
}

void MappedFile::advise_random() const {
  // MADV_DONTNEED on a shared file mapping only unmaps this process's pages; nothing is lost.
  ::madvise(data_, size_, MADV_RANDOM);
  ::madvise(data_, size_, MADV_DONTNEED);
}

}  // namespace zero
