// The check every model's set_batch makes of a micro-batch's tokens.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "zero/error.h"

namespace zero {

// ConfigError unless every input and target id of the n is in [0, vocab_size).
inline void check_batch_tokens(const std::int32_t* inputs, const std::int32_t* targets, std::size_t n, int vocab_size) {
  for (std::size_t i = 0; i < n; ++i) {
    if (inputs[i] < 0 || inputs[i] >= vocab_size || targets[i] < 0 || targets[i] >= vocab_size) {
      throw ConfigError(cat("[model] token ", std::max(inputs[i], targets[i]), " is outside the vocabulary of ", vocab_size,
                            ": set model.vocab_size to cover the data"));
    }
  }
}

}  // namespace zero
