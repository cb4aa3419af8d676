// What a fuzz harness counts as a crash. An input may be refused with a zero::Error (a message
// for the user: that is the reader doing its job); anything else escaping the reader is a bug:
// a ZERO_CHECK failure (std::logic_error), a standard-library exception (std::out_of_range from
// stod, nlohmann's type errors), and of course a signal. The harness turns every such exception
// into abort(), which libFuzzer (and the replay driver) reports as a crash with the message.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <unistd.h>

#include "common/error.h"

namespace zero::fuzz {

template <typename Body>
void expect_only_zero_errors(const char* what, Body&& body) {
  try {
    body();
  } catch (const zero::Error&) {
    // A refusal with a message: fine.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zero-fuzz: %s: an exception other than zero::Error escaped: %s\n", what, e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "zero-fuzz: %s: an unknown exception escaped\n", what);
    std::abort();
  }
}

// A file holding `bytes` under `name` in this process's own scratch directory (tmpfs when there
// is one), for the readers that take a path. Rewritten on every call.
std::string scratch_file(const std::string& name, const void* bytes, std::size_t size);

}  // namespace zero::fuzz
