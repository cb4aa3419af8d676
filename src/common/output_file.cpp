#include "common/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "common/input_file.h"

namespace zero {
namespace {

[[noreturn]] void fail(const NamedPath& out, const std::string& what) {
  throw Error(cat("[output] ", out.what, " ", out.path, " ", what));
}

std::string parent_directory(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The file the output replaces: the path itself, or for a symlink to a regular file the file it
// names (renaming over the link would replace the link, not the file). Refuses everything else.
std::string resolve_target(const NamedPath& out) {
  const std::string& path = out.path;
  if (path.empty()) fail(out, "is an empty path: name a file");
  if (path.back() == '/') fail(out, "names a directory (it ends in '/'): name a file");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) fail(out, cat("cannot be examined: ", std::strerror(errno)));
    return path;  // a new file
  }
  if (S_ISREG(st.st_mode)) return path;
  if (!S_ISLNK(st.st_mode)) {
    fail(out, cat("is ", file_type_name(st.st_mode), ", not a regular file: zero replaces only regular files; "
                  "name a regular file or a new path"));
  }
  if (::stat(path.c_str(), &st) != 0) {
    fail(out, "is a symbolic link to a file that does not exist: remove the link, or name another path");
  }
  if (!S_ISREG(st.st_mode)) {
    fail(out, cat("is a symbolic link to ", file_type_name(st.st_mode), ", not to a regular file: zero replaces only "
                  "regular files; name a regular file or a new path"));
  }
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
  if (!real) fail(out, cat("is a symbolic link that cannot be resolved: ", std::strerror(errno)));
  return real.get();
}

void check_directory(const NamedPath& out, const std::string& target) {
  const std::string dir = parent_directory(target);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    fail(out, cat("cannot be written: its directory ", dir, " does not exist; create it first"));
  }
  if (!S_ISDIR(st.st_mode)) fail(out, cat("cannot be written: ", dir, " is not a directory"));
}

// An existing output that is also an input (the same device and inode, whatever the names).
void check_not_input(const NamedPath& out, const std::string& target, const std::vector<NamedPath>& inputs) {
  struct stat o {};
  if (::stat(target.c_str(), &o) != 0) return;  // a new file is no input
  for (const NamedPath& in : inputs) {
    struct stat i {};
    if (in.path.empty() || ::stat(in.path.c_str(), &i) != 0) continue;
    if (i.st_dev == o.st_dev && i.st_ino == o.st_ino) {
      fail(out, cat("is the same file as ", in.what, " ", in.path, ": writing it would destroy an input of this run; "
                    "name another file"));
    }
  }
}

mode_t process_umask() {
  static const mode_t mask = [] {
    const mode_t old = ::umask(022);
    ::umask(old);
    return old;
  }();
  return mask;
}

// Creates "<target>.XXXXXX.partial" (a unique name) with the mode a new file would get.
int create_temp(const NamedPath& out, const std::string& target, std::string& temp) {
  std::string name = target + ".XXXXXX.partial";
  const int fd = ::mkostemps(name.data(), 8, O_CLOEXEC);
  if (fd < 0) {
    fail(out, cat("cannot be written: creating a file in ", parent_directory(target), " failed (", std::strerror(errno),
                  "); check that the directory is writable and has space"));
  }
  ::fchmod(fd, 0666 & ~process_umask());
  temp = name;
  return fd;
}

void write_all(const NamedPath& out, int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(out, cat("could not be written (", std::strerror(errno), "): check the disk space"));
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string checked_target(const NamedPath& out, const std::vector<NamedPath>& inputs) {
  const std::string target = resolve_target(out);
  check_directory(out, target);
  check_not_input(out, target, inputs);
  return target;
}

}  // namespace

std::string check_output_path(const NamedPath& out, const std::vector<NamedPath>& inputs) {
  const std::string target = checked_target(out, inputs);
  std::string temp;
  ::close(create_temp(out, target, temp));
  ::unlink(temp.c_str());
  return target;
}

void check_output_paths(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  std::vector<std::string> targets;
  for (const NamedPath& out : outputs) {
    if (out.path.empty()) continue;
    const std::string target = check_output_path(out, inputs);
    std::unique_ptr<char, decltype(&std::free)> dir(::realpath(parent_directory(target).c_str(), nullptr), &std::free);
    const std::string name = target.substr(target.find_last_of('/') + 1);
    const std::string where = (dir ? std::string(dir.get()) : parent_directory(target)) + "/" + name;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      if (targets[i] == where) fail(out, "is also named by another output flag of this run: give each output its own file");
    }
    targets.push_back(where);
  }
}

OutputFile::OutputFile(const NamedPath& out, const std::vector<NamedPath>& inputs)
    : out_(out), target_(checked_target(out, inputs)) {
  fd_ = create_temp(out_, target_, temp_);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void OutputFile::write(std::string_view bytes) {
  ZERO_CHECK(fd_ >= 0 && !committed_, "write to ", out_.path, " after commit");
  write_all(out_, fd_, bytes);
}

void OutputFile::commit() {
  ZERO_CHECK(fd_ >= 0 && !committed_, "commit of ", out_.path, " twice");
  if (::fsync(fd_) != 0) fail(out_, cat("could not be written to the disk (", std::strerror(errno), ")"));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(out_, cat("could not be written (", std::strerror(errno), "): check the disk space"));
  resolve_target(out_);  // still a regular file or absent: something put a directory or device there meanwhile
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    fail(out_, cat("could not be published: renaming ", temp_, " to it failed (", std::strerror(errno), ")"));
  }
  committed_ = true;
  const int dir = ::open(parent_directory(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {  // the rename itself reaches the disk
    ::fsync(dir);
    ::close(dir);
  }
}

void write_output_file(const NamedPath& out, std::string_view bytes, const std::vector<NamedPath>& inputs) {
  OutputFile file(out, inputs);
  file.write(bytes);
  file.commit();
}

// Opened without O_TRUNC and checked through the descriptor: whatever was put at the path since
// the start-up check (a device, a FIFO, an input), nothing of it is lost. O_NONBLOCK: a FIFO put
// there does not block the open. The lock (a POSIX record lock, which names its holder) makes
// the run this file's one writer: two runs appending to one file would interleave their steps.
OutputLog::OutputLog(const NamedPath& out, const std::vector<NamedPath>& inputs, bool append)
    : out_(out), target_(check_output_path(out, inputs)), append_(append) {
  resolve_target(out_);
  fd_ = ::open(target_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
  created_ = fd_ >= 0;
  if (fd_ < 0 && errno == EEXIST) fd_ = ::open(target_.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) fail(out_, cat("cannot be written (", std::strerror(errno), "): check that its directory is writable"));
  try {
    check_and_lock(inputs);
  } catch (...) {
    ::close(fd_);
    if (created_) ::unlink(target_.c_str());
    throw;
  }
  ::fcntl(fd_, F_SETFL, O_APPEND);  // blocking writes from here
}

void OutputLog::check_and_lock(const std::vector<NamedPath>& inputs) {
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    fail(out_, "is no longer a regular file: something replaced it since the start; name a regular file or a new path");
  }
  check_not_input(out_, target_, inputs);
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;  // the whole file
  if (::fcntl(fd_, F_SETLK, &lock) != 0) {
    struct flock holder = lock;
    const bool known = ::fcntl(fd_, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK;
    fail(out_, cat("is being written by another run", known ? cat(" (pid ", holder.l_pid, ")") : std::string(),
                   ": give each run its own --metrics file, or wait for that run to end"));
  }
}

// A file this run created and never wrote is removed: a run that fails before its first step
// leaves the path as it found it.
OutputLog::~OutputLog() {
  if (fd_ < 0) return;
  if (created_ && !written_) ::unlink(target_.c_str());
  ::close(fd_);
}

void OutputLog::write(std::string_view bytes) {
  if (!written_ && !append_ && ::ftruncate(fd_, 0) != 0) fail(out_, cat("could not be emptied (", std::strerror(errno), ")"));
  written_ = true;
  write_all(out_, fd_, bytes);
}

void OutputLog::truncate(std::uint64_t bytes) {
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) fail(out_, cat("could not be cut back (", std::strerror(errno), ")"));
}

void OutputLog::sync() {
  if (fd_ >= 0 && ::fsync(fd_) != 0) fail(out_, cat("could not be written to the disk (", std::strerror(errno), ")"));
}

}  // namespace zero
