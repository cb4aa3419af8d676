#include "data/token_span.h"

#include <algorithm>
#include <bit>

#include "common/error.h"
#include "common/mapped_file.h"

namespace zero::data {
namespace {

static_assert(std::endian::native == std::endian::little, "a uint16 token's bytes are read little-endian");

// Tokens [0, count) of `bytes` widened to int32 (two-byte tokens little-endian, as llm.c writes them).
void widen(const unsigned char* bytes, std::size_t count, int width, std::int32_t* out) {
  if (width == 1) {
    for (std::size_t i = 0; i < count; ++i) out[i] = bytes[i];
  } else {
    for (std::size_t i = 0; i < count; ++i) out[i] = bytes[2 * i] | (bytes[2 * i + 1] << 8);
  }
}

int largest(const unsigned char* bytes, std::size_t count, int width) {
  int most = 0;
  if (width == 1) {
    for (std::size_t i = 0; i < count; ++i) most = std::max<int>(most, bytes[i]);
  } else {
    for (std::size_t i = 0; i < count; ++i) most = std::max(most, bytes[2 * i] | (bytes[2 * i + 1] << 8));
  }
  return most;
}

}  // namespace

TokenSpan::TokenSpan(const unsigned char* bytes, std::size_t size, int width, const MappedFile* file)
    : bytes_(bytes), size_(size), width_(width), file_(file) {
  ZERO_CHECK(width == 1 || width == 2, "token width ", width);
}

TokenSpan::TokenSpan(std::span<const std::uint16_t> tokens)
    : bytes_(reinterpret_cast<const unsigned char*>(tokens.data())), size_(tokens.size()), width_(2) {}

TokenSpan TokenSpan::subspan(std::size_t offset, std::size_t count) const {
  ZERO_CHECK(offset <= size_ && count <= size_ - offset, "tokens ", offset, " + ", count, " of ", size_);
  TokenSpan s = *this;
  s.bytes_ = bytes_ + offset * static_cast<std::size_t>(width_);
  s.size_ = count;
  return s;
}

void TokenSpan::read(std::size_t offset, std::size_t count, std::int32_t* out) const {
  ZERO_CHECK(offset <= size_ && count <= size_ - offset, "tokens ", offset, " + ", count, " of ", size_);
  const unsigned char* from = bytes_ + offset * static_cast<std::size_t>(width_);
  if (!file_) return widen(from, count, width_, out);
  const int width = width_;
  file_->read([from, count, width, out] { widen(from, count, width, out); });
}

std::uint16_t TokenSpan::operator[](std::size_t i) const {
  std::int32_t token = 0;
  read(i, 1, &token);
  return static_cast<std::uint16_t>(token);
}

std::vector<std::uint16_t> TokenSpan::to_vector() const {
  std::vector<std::int32_t> wide(size_);
  read(0, size_, wide.data());
  return {wide.begin(), wide.end()};
}

int TokenSpan::max_token() const {
  if (!file_) return largest(bytes_, size_, width_);
  int most = 0;
  const unsigned char* bytes = bytes_;
  const std::size_t count = size_;
  const int width = width_;
  file_->read([bytes, count, width, &most] { most = largest(bytes, count, width); });
  return most;
}

}  // namespace zero::data
