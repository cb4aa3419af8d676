// The tokenizer interface, the factory, and GPT-2's BPE on small hand-made vocabularies whose
// merges are worked out by hand here; the comparison with GPT-2's real files against independent
// implementations is gpt2_reference_test.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "data/gpt2_bpe.h"
#include "data/temp_dir_test.h"
#include "data/tokenizer.h"

namespace zero::data {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

class TokenizerTest : public testing::TempDirTest {
 protected:
  // A vocabulary of the 256 bytes (ids 0..255 in byte order, in GPT-2's alphabet) and `extra`
  // tokens after them, written as vocab.json.
  std::string write_vocab(const std::vector<std::string>& extra, const std::string& name = "vocab.json") const {
    const std::array<char32_t, 256> table = gpt2_byte_to_unicode();
    std::string json = "{";
    for (int b = 0; b < 256; ++b) json += cat(b ? "," : "", "\"", utf8(table[b]), "\":", b);
    for (std::size_t i = 0; i < extra.size(); ++i) json += cat(",\"", extra[i], "\":", 256 + i);
    return write(name, json + "}");
  }
  static std::string utf8(char32_t c) {
    if (c == '"') return "\\\"";
    if (c == '\\') return "\\\\";
    if (c < 0x80) return std::string(1, static_cast<char>(c));
    return {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
  }
};

TEST_F(TokenizerTest, FactoryGivesTheByteTokenizerByDefault) {
  for (const char* spec : {"", "bytes"}) {
    const auto t = open_tokenizer(spec);
    EXPECT_EQ(t->vocab_size(), 256u);
    EXPECT_FALSE(t->end_of_text());
    const std::string text("a\xFF\0z", 4);
    const std::vector<TokenId> ids = t->encode(text);
    EXPECT_EQ(ids, (std::vector<TokenId>{'a', 0xFF, 0, 'z'}));
    EXPECT_EQ(t->decode(ids), text);
  }
  const TokenId bad[] = {1, 256};
  EXPECT_NE(error_of([&] { open_tokenizer("bytes")->decode(bad); }).find("token 256 at position 1 is not a byte"),
            std::string::npos);
}

// Merges by rank, every place of the best pair left to right, then the next best.
TEST_F(TokenizerTest, BpeMergesBestRankFirstLeftToRight) {
  write_vocab({"aa", "ab", "aab", "Ġa"});
  write("merges.txt", "#version: 0.2\na a\na b\naa b\nĠ a\n");
  const auto t = open_tokenizer(dir_.string());
  const TokenId aa = 256, ab = 257, aab = 258;
  const Gpt2Bpe& bpe = dynamic_cast<const Gpt2Bpe&>(*t);
  EXPECT_EQ(bpe.merge_word("aaa"), (std::vector<TokenId>{aa, 'a'}));          // no overlap
  EXPECT_EQ(bpe.merge_word("aab"), (std::vector<TokenId>{aab}));              // a a (rank 0) before a b
  EXPECT_EQ(bpe.merge_word("abab"), (std::vector<TokenId>{ab, ab}));
  EXPECT_EQ(bpe.merge_word("aaaab"), (std::vector<TokenId>{aa, aab}));
  EXPECT_EQ(bpe.merge_word("xyz"), (std::vector<TokenId>{'x', 'y', 'z'}));
  // The regex keeps a space with the letters after it; words do not merge across each other:
  // " aab" is Ġ a a b -> Ġ aa b (a a, rank 0) -> Ġ aab (aa b, rank 2; Ġ a, rank 3, no longer a pair).
  EXPECT_EQ(t->encode("aa aab"), (std::vector<TokenId>{aa, ' ', aab}));
  EXPECT_EQ(t->encode("a ab"), (std::vector<TokenId>{'a', ' ', ab}));  // a b (rank 1) wins over Ġ a (rank 3)
  EXPECT_EQ(t->encode("b a"), (std::vector<TokenId>{'b', 259}));
  EXPECT_EQ(t->decode(t->encode("aa aab")), "aa aab");
  EXPECT_FALSE(t->end_of_text());
}

TEST_F(TokenizerTest, EndOfTextGoesBetweenDocuments) {
  write_vocab({"aa", "<|endoftext|>"}, "encoder.json");
  write("vocab.bpe", "a a\n");
  const auto t = open_tokenizer((dir_ / "encoder.json").string());
  ASSERT_EQ(t->end_of_text(), TokenId{257});
  const std::string_view docs[] = {"aa", "a", "aa"};
  EXPECT_EQ(encode_documents(*t, docs), (std::vector<TokenId>{256, 257, 'a', 257, 256}));
  // Text that spells the marker is ordinary text.
  EXPECT_EQ(t->encode("<|endoftext|>").size(), 13u);
  const std::string_view two[] = {"a", "b"};
  EXPECT_NE(error_of([&] { encode_documents(ByteTokenizer(), two); }).find("no end-of-text token"), std::string::npos);
}

// Any bytes, invalid UTF-8 included, come back byte for byte.
TEST_F(TokenizerTest, AnyBytesRoundTrip) {
  write_vocab({"aa", "ab"});
  write("merges.txt", "a a\na b\n");
  const auto t = open_tokenizer((dir_ / "merges.txt").string());
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(round % 2 ? rng() % 256 : "ab \n'\xC3\xA9\xFF\xE2\x80"[rng() % 10]);
    const std::vector<TokenId> ids = t->encode(bytes);
    ASSERT_EQ(t->decode(ids), bytes) << "round " << round;
  }
}

TEST_F(TokenizerTest, BadFilesAreNamedErrors) {
  const auto error = [&](const std::string& spec) { return error_of([&] { open_tokenizer(spec); }); };
  EXPECT_NE(error((dir_ / "nothing.json").string()).find("does not exist"), std::string::npos);
  EXPECT_NE(error(dir_.string()).find("holds no tokenizer"), std::string::npos);
  write_vocab({"aa"});
  EXPECT_NE(error((dir_ / "vocab.json").string()).find("needs its pair"), std::string::npos);
  write("merges.txt", "a a\na q\n");
  write_vocab({"aa"});
  EXPECT_NE(error(dir_.string()).find("merges into 'aq', which is not in"), std::string::npos);
  write("merges.txt", "a a\nzz a\n");
  EXPECT_NE(error(dir_.string()).find("line 2 names the token 'zz', which is not in"), std::string::npos);
  write("merges.txt", "a a b\n");
  EXPECT_NE(error(dir_.string()).find("line 1 is not a merge"), std::string::npos);
  write("merges.txt", "a a\n");
  write("vocab.json", "{\"a\": 0, \"b\"");
  EXPECT_NE(error(dir_.string()).find("is truncated JSON"), std::string::npos);
  write("vocab.json", std::string("\x0A\x05\x0D\x00\x00\x00", 6));
  EXPECT_NE(error(dir_.string()).find("is not a JSON file"), std::string::npos);
  write("vocab.json", "[1, 2]");
  EXPECT_NE(error(dir_.string()).find("not a GPT-2 vocabulary"), std::string::npos);
  write("vocab.json", "{\"a\": 0}");
  EXPECT_NE(error(dir_.string()).find("has no token for the byte 0"), std::string::npos);
  write("vocab.json", "{\"a\": 5}");
  EXPECT_NE(error(dir_.string()).find("has id 5, not one of 0..0"), std::string::npos);
  write("vocab.json", "{\"\xE6\x97\xA5\": 0}");
  EXPECT_NE(error(dir_.string()).find("outside GPT-2's byte-to-unicode alphabet"), std::string::npos);
  EXPECT_NE(error(write("notes.txt", "x")).find("not a tokenizer file zero knows"), std::string::npos);
}

}  // namespace
}  // namespace zero::data
