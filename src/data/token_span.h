// A read-only run of tokens as they lie in the data: one byte each (text: the byte tokens are the
// bytes themselves) or two (an llm.c .bin: uint16, little-endian), in a mapping of the data file
// or in memory a TokenData owns. Nothing is converted or copied until a batch is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace zero {
class MappedFile;
}

namespace zero::data {

class TokenSpan {
 public:
  TokenSpan() = default;
  // `width` bytes per token (1 or 2); `file` is the mapping the bytes lie in (nullptr: memory),
  // whose reads are checked against the file changing (common/mapped_file.h).
  TokenSpan(const unsigned char* bytes, std::size_t size, int width, const MappedFile* file = nullptr);
  TokenSpan(std::span<const std::uint16_t> tokens);  // NOLINT: a vector of tokens is a span of them

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int width() const { return width_; }

  TokenSpan first(std::size_t n) const { return subspan(0, n); }
  TokenSpan last(std::size_t n) const { return subspan(size_ - n, n); }
  TokenSpan subspan(std::size_t offset, std::size_t count) const;

  // Tokens [offset, offset + count) into `out`; from a mapping, zero::Error if the file changed.
  void read(std::size_t offset, std::size_t count, std::int32_t* out) const;
  // Token i (one read: for a few tokens, not a loop over many).
  std::uint16_t operator[](std::size_t i) const;
  // All tokens, for small spans (a prompt, tests).
  std::vector<std::uint16_t> to_vector() const;
  // The largest token (0 when empty).
  int max_token() const;
  // Whether the tokens lie in the same bytes (the same storage, offset and length).
  bool same_bytes(const TokenSpan& other) const { return bytes_ == other.bytes_ && size_ == other.size_ && width_ == other.width_; }
  const unsigned char* bytes() const { return bytes_; }

 private:
  const unsigned char* bytes_ = nullptr;  // (size_ * width_) not owned
  std::size_t size_ = 0;
  int width_ = 2;
  const MappedFile* file_ = nullptr;  // not owned; nullptr when the bytes are in memory
};

}  // namespace zero::data
