// A file a user names, mapped read-only and shared (MAP_SHARED): every process that maps it reads
// the one copy in the page cache, so the ranks of a host hold a data file once, not once each.
//
// A mapping sees the file as it is now, not as it was: a file rewritten in place changes under
// the reader, and a read past its new end (after a truncation) raises SIGBUS, which would end the
// process without a word. So every read goes through read(): it first compares the file's size
// and modification time with those it had when mapped (a change is a zero::Error naming both),
// then copies with SIGBUS from this mapping turned into the same error, which covers a
// truncation between the comparison and the copy. A file replaced by a rename is not a change:
// the mapping keeps the old file, as a process that read the file at start-up would.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <functional>
#include <string>
#include <string_view>

#include "common/input_file.h"

namespace zero {

class MappedFile {
 public:
  // Opens and maps `file` (input_file.h's checks: a regular file, at most max_bytes). The file
  // must not be empty (size 0 cannot be mapped; /proc files say 0 and are read instead).
  explicit MappedFile(const InputFile& file);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return file_.path; }
  std::uint64_t size() const { return size_; }

  // The mapped bytes, to read through read() (a direct read of a truncated file is SIGBUS).
  const unsigned char* data() const { return data_; }

  // Runs `copy`, which reads from data(), after checking that the file has not changed; a
  // change, or SIGBUS raised by `copy` in this mapping, throws zero::Error ("[<component>]
  // <role> <path> changed while this run was reading it: ..."). `copy` must hold no object with
  // a destructor: a fault leaves it by siglongjmp.
  void read(const std::function<void()>& copy) const;

  // Tells the kernel the bytes are read at random (no read-ahead past what is asked) and drops
  // this process's page-table entries for them, so the process's resident set counts only what
  // it reads next; the pages stay in the page cache for every process that maps the file.
  void advise_random() const;

 private:
  [[noreturn]] void fail_changed(const std::string& now) const;
  void check_unchanged() const;

  InputFile file_;
  InputFd fd_;
  unsigned char* data_ = nullptr;  // (size_) PROT_READ, MAP_SHARED
  std::uint64_t size_ = 0;
  timespec mtime_{};               // st_mtim when mapped
};

}  // namespace zero
