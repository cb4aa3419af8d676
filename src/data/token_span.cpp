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

struct TokenSpan::Joined {
  std::vector<TokenSpan> parts;     // each a plain (unjoined) span
  std::vector<std::size_t> starts;  // (parts + 1) where each part begins in the concatenation
};

template <class F>
void TokenSpan::each_part(std::size_t offset, std::size_t count, F&& f) const {
  const Joined& j = *joined_;
  std::size_t at = joined_offset_ + offset;  // in the concatenation
  const std::size_t end = at + count;
  auto part = static_cast<std::size_t>(std::upper_bound(j.starts.begin(), j.starts.end(), at) - j.starts.begin()) - 1;
  for (std::size_t done = 0; at < end; ++part) {
    const std::size_t in_part = at - j.starts[part];
    const std::size_t n = std::min(end, j.starts[part + 1]) - at;
    f(j.parts[part], in_part, n, done);
    at += n;
    done += n;
  }
}

TokenSpan TokenSpan::join(std::vector<TokenSpan> parts) {
  ZERO_CHECK(!parts.empty(), "joining no token spans");
  if (parts.size() == 1) return parts.front();
  auto j = std::make_shared<Joined>();
  j->starts.push_back(0);
  for (const TokenSpan& p : parts) {
    ZERO_CHECK(p.width_ == parts.front().width_, "joining token spans of widths ", parts.front().width_, " and ", p.width_);
    if (p.joined_) {  // flatten: a joined part's own parts
      p.each_part(0, p.size_, [&](const TokenSpan& q, std::size_t off, std::size_t n, std::size_t) {
        j->parts.push_back(q.subspan(off, n));
        j->starts.push_back(j->starts.back() + n);
      });
    } else if (!p.empty()) {
      j->parts.push_back(p);
      j->starts.push_back(j->starts.back() + p.size_);
    }
  }
  TokenSpan s;
  s.width_ = parts.front().width_;
  s.size_ = j->starts.back();
  s.joined_ = std::move(j);
  return s;
}

const unsigned char* TokenSpan::bytes() const {
  if (!joined_) return bytes_;
  const unsigned char* first = nullptr;
  if (size_ > 0) each_part(0, 1, [&](const TokenSpan& p, std::size_t off, std::size_t, std::size_t) { first = p.bytes_ + off * static_cast<std::size_t>(width_); });
  return first;
}

TokenSpan::TokenSpan(const unsigned char* bytes, std::size_t size, int width, const MappedFile* file)
    : bytes_(bytes), size_(size), width_(width), file_(file) {
  ZERO_CHECK(width == 1 || width == 2, "token width ", width);
}

TokenSpan::TokenSpan(std::span<const std::uint16_t> tokens)
    : bytes_(reinterpret_cast<const unsigned char*>(tokens.data())), size_(tokens.size()), width_(2) {}

TokenSpan TokenSpan::subspan(std::size_t offset, std::size_t count) const {
  ZERO_CHECK(offset <= size_ && count <= size_ - offset, "tokens ", offset, " + ", count, " of ", size_);
  TokenSpan s = *this;
  if (joined_) {
    s.joined_offset_ += offset;
  } else {
    s.bytes_ = bytes_ + offset * static_cast<std::size_t>(width_);
  }
  s.size_ = count;
  return s;
}

void TokenSpan::read(std::size_t offset, std::size_t count, std::int32_t* out) const {
  ZERO_CHECK(offset <= size_ && count <= size_ - offset, "tokens ", offset, " + ", count, " of ", size_);
  if (joined_) {
    return each_part(offset, count, [out](const TokenSpan& p, std::size_t off, std::size_t n, std::size_t done) { p.read(off, n, out + done); });
  }
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
  if (joined_) {
    int most = 0;
    each_part(0, size_, [&most](const TokenSpan& p, std::size_t off, std::size_t n, std::size_t) { most = std::max(most, p.subspan(off, n).max_token()); });
    return most;
  }
  if (!file_) return largest(bytes_, size_, width_);
  int most = 0;
  const unsigned char* bytes = bytes_;
  const std::size_t count = size_;
  const int width = width_;
  file_->read([bytes, count, width, &most] { most = largest(bytes, count, width); });
  return most;
}

}  // namespace zero::data
