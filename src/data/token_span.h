// A read-only run of tokens as they lie in the data: one byte each (text: the byte tokens are the
// bytes themselves) or two (an llm.c .bin: uint16, little-endian), in a mapping of the data file
// or in memory a TokenData owns. Nothing is converted or copied until a batch is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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
  // The spans one after another, read as one run (shards of a data set): a read may cross from
  // one into the next. All of the same width (ZERO_CHECK; callers say which files differ first).
  static TokenSpan join(std::vector<TokenSpan> parts);

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
  bool same_bytes(const TokenSpan& other) const {
    return bytes_ == other.bytes_ && joined_ == other.joined_ && joined_offset_ == other.joined_offset_ && size_ == other.size_ && width_ == other.width_;
  }
  // The first token's bytes (a joined span: its first part's).
  const unsigned char* bytes() const;

 private:
  struct Joined;
  // Calls f(part, offset in part, count, offset in the request) for each part that
  // [offset, offset + count) overlaps, in order.
  template <class F>
  void each_part(std::size_t offset, std::size_t count, F&& f) const;

  // A joined span: the parts, and where this span's token 0 lies in their concatenation.
  std::shared_ptr<const Joined> joined_;
  std::size_t joined_offset_ = 0;
  const unsigned char* bytes_ = nullptr;  // (size_ * width_) not owned
  std::size_t size_ = 0;
  int width_ = 2;
  const MappedFile* file_ = nullptr;  // not owned; nullptr when the bytes are in memory
};

}  // namespace zero::data
