#include "common/sha256.h"

#include <openssl/evp.h>

#include "common/error.h"

namespace zero {
namespace {

std::string to_hex(const unsigned char* digest, unsigned int len) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

[[noreturn]] void fail() { throw Error("[common] OpenSSL could not compute SHA-256"); }

}  // namespace

std::string sha256_hex(const void* data, std::size_t bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data, bytes, digest, &len, EVP_sha256(), nullptr) != 1) fail();
  return to_hex(digest, len);
}

struct Sha256::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  if (!context_->ctx || EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr) != 1) fail();
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, std::size_t bytes) {
  if (EVP_DigestUpdate(context_->ctx, data, bytes) != 1) fail();
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(context_->ctx, digest, &len) != 1) fail();
  return to_hex(digest, len);
}

}  // namespace zero
