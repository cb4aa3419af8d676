// GPT-2's pre-tokenisation: text is cut into pieces ("words") by OpenAI's regex before BPE runs
// inside each piece, so a merge never crosses a word boundary:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (contractions, a letter run, a digit run, a run of other symbols, each with at most one space
// before it; whitespace, leaving its last space to the word after it).
//
// The regex is PCRE2's (Debian's libpcre2-8, UTF + UCP, JIT-compiled), so \p{L}, \p{N} and \s
// follow PCRE2's Unicode tables rather than tables written here. Regex engines disagree on \s at
// three code points, so GPT-2 implementations do too: PCRE2 (so zero) counts U+0085 (NEL) and
// U+180E (Mongolian vowel separator) as whitespace and not U+FEFF (BOM); OpenAI's Python `regex`
// counts U+0085 only; JavaScript's /u regexes (gpt-3-encoder, js-tiktoken) count U+FEFF only.
// Text with those characters can tokenize differently from one implementation to another.
//
// Invalid UTF-8: a regex sees characters, so bytes that do not form UTF-8 cannot be matched. The
// text is cut into maximal runs of valid UTF-8 and maximal runs of invalid bytes; each valid run
// is pre-tokenised by the regex on its own (as if the invalid bytes were the text's edges) and
// each invalid run is one piece, which BPE then merges byte by byte like any other. So every byte
// lands in exactly one piece, in order, and decode(encode(x)) == x for any bytes x.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

namespace zero::data {

class Pretokenizer {
 public:
  Pretokenizer();  // compiles the regex; zero::Error if PCRE2 refuses it (a broken libpcre2)
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  // Calls `piece` with each piece of `text` in order; the pieces concatenate to `text`.
  // Thread-safe: each call uses its own match state.
  void split(std::string_view text, const std::function<void(std::string_view)>& piece) const;

 private:
  void split_valid(std::string_view text, const std::function<void(std::string_view)>& piece) const;
  struct Regex;
  std::unique_ptr<Regex> regex_;
};

}  // namespace zero::data
