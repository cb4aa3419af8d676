// SHA-256 (OpenSSL's), for fingerprints anyone can recompute: final weights, checkpoints, data.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace zero {

std::string sha256_hex(const void* data, std::size_t bytes);

// SHA-256 of bytes given piece by piece (data read a chunk at a time); the digest of the
// concatenation, as sha256_hex gives it.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, std::size_t bytes);
  std::string hex();  // the digest in lower-case hex; once

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

}  // namespace zero
