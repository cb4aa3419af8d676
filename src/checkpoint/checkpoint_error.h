// A checkpoint that cannot be written, found, read or used: the message names the file and what
// is wrong with it, and says what to do.
#pragma once

#include "common/error.h"

namespace zero {

class CheckpointError : public Error {
 public:
  using Error::Error;
};

}  // namespace zero
