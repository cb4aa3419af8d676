#include "data/tokenizer.h"

#include "common/error.h"

namespace zero::data {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

struct CodePoint {
  std::size_t length;  // bytes of the sequence; 0 when the bytes at the position are invalid
  char32_t value;
};

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Decodes the UTF-8 sequence at bytes[at], following RFC 3629's table of well-formed sequences
// (which rules out overlong forms, surrogates and code points past U+10FFFF).
CodePoint decode_at(std::string_view bytes, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(bytes[at + i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return {1, lead};
  std::size_t length = 0;
  char32_t value = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, value = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, value = lead & 0x0F;
    if (lead == 0xE0) lo = 0xA0;  // no overlong 3-byte forms
    if (lead == 0xED) hi = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, value = lead & 0x07;
    if (lead == 0xF0) lo = 0x90;  // no overlong 4-byte forms
    if (lead == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return {0, 0};
  }
  if (at + length > bytes.size()) return {0, 0};
  if (byte(1) < lo || byte(1) > hi) return {0, 0};
  for (std::size_t i = 1; i < length; ++i) {
    if (!is_continuation(byte(i))) return {0, 0};
    value = (value << 6) | (byte(i) & 0x3F);
  }
  return {length, value};
}

bool is_control(char32_t c) {
  if (c == U'\n' || c == U'\t') return false;
  return c < 0x20 || (c >= 0x7F && c <= 0x9F);  // C0, DEL and C1
}

template <typename Id>
std::string bytes_of(std::span<const Id> tokens) {
  std::string text(tokens.size(), '\0');
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] >= ByteTokenizer::kVocabSize) {
      throw Error(cat("[data] token ", tokens[i], " at position ", i,
                      " is not a byte: the byte tokenizer decodes only tokens 0..255; "
                      "decode this model's output with the tokenizer its data was made with"));
    }
    text[i] = static_cast<char>(tokens[i]);
  }
  return text;
}

}  // namespace

std::vector<std::uint16_t> ByteTokenizer::encode_bytes(std::string_view text) {
  std::vector<std::uint16_t> tokens(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) tokens[i] = static_cast<unsigned char>(text[i]);
  return tokens;
}

std::string ByteTokenizer::decode_bytes(std::span<const std::uint16_t> tokens) { return bytes_of(tokens); }

std::vector<TokenId> ByteTokenizer::encode(std::string_view text) const {
  std::vector<TokenId> ids(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(std::span<const TokenId> ids) const { return bytes_of(ids); }

std::vector<TokenId> encode_documents(const Tokenizer& tokenizer, std::span<const std::string_view> documents) {
  const std::optional<TokenId> eot = tokenizer.end_of_text();
  if (!eot && documents.size() > 1) {
    throw Error(cat("[data] the tokenizer ", tokenizer.describe(), " has no end-of-text token to put between ",
                    documents.size(), " documents: join them into one text, or use a tokenizer that has one"));
  }
  std::vector<TokenId> ids;
  for (std::size_t d = 0; d < documents.size(); ++d) {
    if (d > 0) ids.push_back(*eot);
    const std::vector<TokenId> part = tokenizer.encode(documents[d]);
    ids.insert(ids.end(), part.begin(), part.end());
  }
  return ids;
}

std::size_t utf8_sequence_length(std::string_view bytes, std::size_t at) { return decode_at(bytes, at).length; }

std::size_t utf8_error_offset(std::string_view bytes) {
  std::size_t at = 0;
  while (at < bytes.size()) {
    const CodePoint cp = decode_at(bytes, at);
    if (cp.length == 0) return at;
    at += cp.length;
  }
  return std::string_view::npos;
}

std::string printable_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t at = 0;
  while (at < bytes.size()) {
    const CodePoint cp = decode_at(bytes, at);
    if (cp.length == 0 || is_control(cp.value)) {
      out += kReplacement;
      at += cp.length == 0 ? 1 : cp.length;
    } else {
      out.append(bytes.substr(at, cp.length));
      at += cp.length;
    }
  }
  return out;
}

bool looks_like_text(std::string_view bytes) {
  constexpr std::size_t kWindow = 4096;
  const std::string_view head = bytes.substr(0, kWindow);
  if (head.find('\0') != std::string_view::npos) return false;
  const std::size_t bad = utf8_error_offset(head);
  // A multi-byte character cut by the window is not evidence against text.
  return bad == std::string_view::npos || (head.size() < bytes.size() && head.size() - bad < 4);
}

}  // namespace zero::data
