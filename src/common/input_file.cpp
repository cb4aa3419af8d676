#include "common/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.h"

namespace zero {
namespace {

[[noreturn]] void fail(const InputFile& f, const std::string& what) {
  throw Error(cat("[", f.component, "] ", f.role, " ", f.path, " ", what));
}

// The message for a failed stat or open: the cause in words, and what to do.
[[noreturn]] void fail_errno(const InputFile& f, int err) {
  if (err == ENOENT) fail(f, "does not exist: check the path");
  if (err == ENOTDIR) fail(f, "does not exist (a part of its path is not a directory): check the path");
  if (err == EACCES) fail(f, "cannot be opened: permission denied; check the file's permissions");
  fail(f, cat("cannot be opened: ", std::strerror(err)));
}

void check_type(const InputFile& f, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) fail(f, cat("is ", file_type_name(st.st_mode), ", not a regular file: pass a regular file"));
  if (static_cast<std::uint64_t>(st.st_size) > f.max_bytes) {
    fail(f, cat("is ", st.st_size, " bytes, more than the ", f.max_bytes, " bytes zero reads from one ", f.role,
                ": split it into smaller files"));
  }
}

// Opens a regular file for blocking reads. The type is checked before opening (opening a device
// can have effects) and again on the descriptor, which is opened without blocking so that a FIFO
// put in the file's place between the two checks cannot hang the open.
FileDescriptor open_regular(const InputFile& f) {
  struct stat st {};
  if (::stat(f.path.c_str(), &st) != 0) fail_errno(f, errno);
  check_type(f, st);
  FileDescriptor fd(::open(f.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) fail_errno(f, errno);
  if (::fstat(fd.get(), &st) != 0) fail(f, cat("cannot be examined: ", std::strerror(errno)));
  check_type(f, st);
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    fail(f, cat("cannot be opened for reading: ", std::strerror(errno)));
  }
  return fd;
}

}  // namespace

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

FileDescriptor::FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

FileDescriptor open_input_file(const InputFile& file) { return open_regular(file); }

std::string file_type_name(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

void check_input_file(const InputFile& file) { open_regular(file); }

std::string read_input_file(const InputFile& file) {
  const FileDescriptor fd = open_regular(file);
  struct stat st {};
  std::string bytes;
  if (::fstat(fd.get(), &st) == 0 && st.st_size > 0) bytes.reserve(static_cast<std::size_t>(st.st_size));
  // Read to the end, not to st_size: files in /proc say 0 bytes and have more, a file may grow.
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::size_t used = 0;
  while (true) {
    bytes.resize(used + kChunk);
    const ssize_t got = ::read(fd.get(), bytes.data() + used, kChunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int err = errno;
      fail(file, cat("could not be read after ", used, " bytes: ", std::strerror(err), "; check the file and the disk"));
    }
    if (got == 0) break;
    used += static_cast<std::size_t>(got);
    if (used > file.max_bytes) {
      fail(file, cat("is longer than the ", file.max_bytes, " bytes zero reads from one ", file.role,
                     ": split it into smaller files"));
    }
  }
  bytes.resize(used);
  return bytes;
}

}  // namespace zero
