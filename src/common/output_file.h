// The one way zero writes a file a user names (--metrics, --trace, --json, --svg, token files).
//
// A user's path is never damaged: it must be a regular file or not exist yet (a device, FIFO,
// socket or directory, also behind a symlink, is refused; a symlink to a regular file is followed
// and the file it names is replaced), it must not be one of the run's inputs (compared by device
// and inode, so another name or a hard link is caught too), and it appears complete or not at
// all: the bytes go to a temporary file with a unique name in the same directory, which is
// fsynced and renamed over the path. Two runs writing the same path each publish their own
// file; the last rename wins. The temporary file is created when the OutputFile is made, so an
// unwritable or missing directory fails at start-up, before any work.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace zero {

struct NamedPath {
  std::string what;  // for messages: "--metrics", "the data file"
  std::string path;
};

// Checks `out` as an output without leaving anything behind: its type, that it is none of
// `inputs`, and that its directory takes a new file (one is created and removed). zero::Error
// ("[output] <what> <path> ...", saying what to do) otherwise. Returns the path the file will be
// published at (a symlink resolved).
std::string check_output_path(const NamedPath& out, const std::vector<NamedPath>& inputs = {});

// Checks that no two of `outputs` would be the same file (after resolving symlinks), then each as
// check_output_path does.
void check_output_paths(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs = {});

class OutputFile {
 public:
  // Checks the path as check_output_path does and creates the temporary file.
  explicit OutputFile(const NamedPath& out, const std::vector<NamedPath>& inputs = {});
  ~OutputFile();  // removes the temporary file unless commit() published it
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view bytes);  // appends; zero::Error naming the file on failure (disk full)
  // Flushes to the disk, renames the temporary file over the path and syncs the directory.
  void commit();
  const std::string& path() const { return out_.path; }

 private:
  NamedPath out_;
  std::string target_;  // the file replaced: out_.path with a symlink resolved
  std::string temp_;    // the temporary file beside it
  int fd_ = -1;
  bool committed_ = false;
};

// An output that grows while the run goes (--metrics: a line per step). Its path is checked as
// OutputFile checks it, then the file is opened (created if absent), checked again through the
// descriptor (a regular file, none of the inputs) and locked: a second run writing the same file
// fails here, naming the holder's pid. An earlier file is emptied at the first write (kept and
// appended to when `append`), so a run that fails before it leaves that file as it was (and
// one it created is removed). Each write goes to the kernel at once, so a run killed later keeps
// every line written before it died; the file is not atomic: a reader may see it grow.
class OutputLog {
 public:
  OutputLog(const NamedPath& out, const std::vector<NamedPath>& inputs = {}, bool append = false);
  ~OutputLog();
  OutputLog(const OutputLog&) = delete;
  OutputLog& operator=(const OutputLog&) = delete;

  void write(std::string_view bytes);  // zero::Error naming the file on failure (disk full)
  void sync();                         // to the disk (at the end of the run)
  void truncate(std::uint64_t bytes);  // keeps the first `bytes` bytes (a resumed run's repeated steps go)
  const std::string& path() const { return out_.path; }

 private:
  void check_and_lock(const std::vector<NamedPath>& inputs);

  NamedPath out_;
  std::string target_;  // out_.path with a symlink resolved
  bool append_ = false;
  bool created_ = false;  // the file did not exist before this run
  bool written_ = false;
  int fd_ = -1;
};

// An OutputFile written whole and committed.
void write_output_file(const NamedPath& out, std::string_view bytes, const std::vector<NamedPath>& inputs = {});

}  // namespace zero
