// The byte-level tokenizer: a token is one byte of the UTF-8 text, so the vocabulary is the 256
// byte values and any text encodes without an unknown token. A character-level model sees a
// multi-byte character as several tokens; the model learns to emit them together.
//
// A model's sample is a byte sequence that need not be valid UTF-8 (it may stop mid-character or
// invent a bad sequence), so what is shown to a person goes through printable_text().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zero::data {

class ByteTokenizer {
 public:
  static constexpr int kVocabSize = 256;

  // One token per byte, in order.
  static std::vector<std::uint16_t> encode(std::string_view text);
  // The bytes back; a token >= 256 is not a byte and throws zero::Error.
  static std::string decode(std::span<const std::uint16_t> tokens);
};

// Offset of the first byte that breaks UTF-8 (a bad lead byte, a missing continuation, an
// overlong form, a surrogate, a code point past U+10FFFF), or std::string_view::npos if the
// whole text is valid. A sequence cut off by the end of `bytes` counts as invalid.
std::size_t utf8_error_offset(std::string_view bytes);

// `bytes` made safe to print: every invalid UTF-8 byte and every control character except
// newline and tab becomes U+FFFD, so a sample cannot break the terminal or a JSON consumer.
std::string printable_text(std::string_view bytes);

// A guess, for naming a mistake in messages (a token file passed as text, text named .bin):
// true when the first 4 KiB hold no NUL byte and are valid UTF-8 up to a sequence cut off by
// the window's end.
bool looks_like_text(std::string_view bytes);

}  // namespace zero::data
