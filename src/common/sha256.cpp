#include "common/sha256.h"

#include <openssl/evp.h>

#include "common/error.h"

namespace zero {

std::string sha256_hex(const void* data, std::size_t bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data, bytes, digest, &len, EVP_sha256(), nullptr) != 1) throw Error("[common] OpenSSL could not compute SHA-256");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace zero
