#include "data/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/error.h"
#include "data/tokenizer.h"

namespace zero::data {
namespace {

constexpr std::string_view kPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct MatchData {  // RAII for a PCRE2 match block
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {
    if (data == nullptr) throw Error("[data] out of memory creating the GPT-2 pre-tokeniser's match state");
  }
  ~MatchData() { pcre2_match_data_free(data); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
  pcre2_match_data* data;
};

// Offset of the first valid UTF-8 sequence at or after `at` (or the end).
std::size_t skip_invalid(std::string_view text, std::size_t at) {
  while (at < text.size() && utf8_sequence_length(text, at) == 0) ++at;
  return at;
}

}  // namespace

struct Pretokenizer::Regex {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Regex() { pcre2_code_free(code); }
};

Pretokenizer::Pretokenizer() : regex_(std::make_unique<Regex>()) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  regex_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern.data()), kPattern.size(), PCRE2_UTF | PCRE2_UCP,
                               &error, &error_offset, nullptr);
  if (regex_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw Error(cat("[data] PCRE2 cannot compile GPT-2's pre-tokenisation regex (", reinterpret_cast<char*>(message),
                    " at offset ", error_offset, "): reinstall libpcre2-8 (scripts/setup.sh)"));
  }
  // JIT is an optimisation: where the platform has none, the interpreter gives the same matches.
  regex_->jit = pcre2_jit_compile(regex_->code, PCRE2_JIT_COMPLETE) == 0;
}

Pretokenizer::~Pretokenizer() = default;

void Pretokenizer::split(std::string_view text, const std::function<void(std::string_view)>& piece) const {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = at;
    while (end < text.size()) {
      const std::size_t n = utf8_sequence_length(text, end);
      if (n == 0) break;
      end += n;
    }
    if (end > at) split_valid(text.substr(at, end - at), piece);
    const std::size_t next = skip_invalid(text, end);
    if (next > end) piece(text.substr(end, next - end));
    at = next;
  }
}

// `text` is valid UTF-8 (checked by split), so PCRE2's own check is skipped.
void Pretokenizer::split_valid(std::string_view text, const std::function<void(std::string_view)>& piece) const {
  MatchData match(regex_->code);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t at = 0;
  while (at < text.size()) {
    const int rc = regex_->jit ? pcre2_jit_match(regex_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, match.data, nullptr)
                               : pcre2_match(regex_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, match.data, nullptr);
    const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.data);
    // Every character is \s, \p{L}, \p{N} or none of them, so a match starts at `at` and is not empty.
    ZERO_CHECK(rc > 0 && span[0] == at && span[1] > at, "GPT-2 pre-tokeniser: no match at byte ", at, " (rc ", rc, ")");
    piece(text.substr(at, span[1] - at));
    at = span[1];
  }
}

}  // namespace zero::data
