// Errors. Two kinds, as the design asks:
//  - zero::Error and its subclasses for what a user can cause or fix (bad config, I/O, a rank
//    that fails, out of memory). Messages start with "[component]" and say what to do next.
//  - ZERO_CHECK for invariants of the library itself; a failure is a bug in zero.
// The library never exits; the CLI catches, prints and aborts all ranks.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace zero {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ConfigError : public Error {  // bad options, bad model description
 public:
  using Error::Error;
};

class CommError : public Error {  // a collective failed, timed out, or a peer died
 public:
  using Error::Error;
};

class OutOfMemoryError : public Error {  // a tier's capacity would be exceeded
 public:
  using Error::Error;
};

class TrainingError : public Error {  // training cannot go on (fp16 overflows at the minimum loss scale)
 public:
  using Error::Error;
};

namespace detail {
[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& msg);
}  // namespace detail

// Builds a message from stream-able parts: cat("[comm] rank ", r, " failed").
template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace zero

// Invariant check: throws std::logic_error naming the expression and location.
#define ZERO_CHECK(cond, ...)                                                              \
  do {                                                                                     \
    if (!(cond)) ::zero::detail::check_failed(#cond, __FILE__, __LINE__, ::zero::cat(__VA_ARGS__)); \
  } while (0)
