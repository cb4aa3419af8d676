// The one way zero reads a file a user names (data, a config for `estimate`): regular files
// only, up to a size limit, with the file named in every error.
//
// Why not std::ifstream: opening a FIFO blocks until a writer appears (a hang), a character
// device such as /dev/zero never ends (memory runs out), and a failed read says nothing. Here the
// file is opened without blocking, checked to be a regular file, and read to its end; a read that
// fails (/proc/self/mem) or a file longer than the limit is a zero::Error.
#pragma once

#include <cstdint>
#include <string>

namespace zero {

struct InputFile {
  std::string path;
  std::string component = "io";   // the "[component]" that starts every message: data, estimate
  std::string role = "input file";  // what the file is, for messages: "data file", "config file"
  std::uint64_t max_bytes = std::uint64_t{1} << 32;  // refuse a longer file
};

// The file's bytes. zero::Error ("[component] <role> <path> ...", saying what to do) for a
// path that does not exist, is not a regular file (a directory, FIFO, socket or device, also
// behind a symlink), cannot be opened or read, or is longer than max_bytes.
std::string read_input_file(const InputFile& file);

// Throws as read_input_file would for the path's type, without reading it: for checking inputs
// at start-up, before any work.
void check_input_file(const InputFile& file);

// A file descriptor, closed when it goes.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  ~FileDescriptor();
  FileDescriptor(FileDescriptor&& other) noexcept;
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The file opened for blocking reads, with read_input_file's checks of its type and size.
FileDescriptor open_input_file(const InputFile& file);

// A path's file type in words, for messages ("a directory", "a FIFO (named pipe)"), from a stat
// mode.
std::string file_type_name(unsigned mode);

}  // namespace zero
