// SHA-256 (OpenSSL's), for fingerprints anyone can recompute: final weights, checkpoints.
#pragma once

#include <cstddef>
#include <string>

namespace zero {

std::string sha256_hex(const void* data, std::size_t bytes);

}  // namespace zero
