// Test helper: the message of the zero::Error a piece of code throws.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace zero::testing {

// Runs `body`, expects zero::Error, and returns its message ("" and a test failure if none).
template <typename Body>
std::string error_of(Body body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected zero::Error";
  return "";
}

}  // namespace zero::testing
