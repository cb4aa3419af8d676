#include <gtest/gtest.h>

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/error_of.h"
#include "data/batches.h"
#include "data/gzip.h"
#include "data/load.h"
#include "data/token_file.h"
#include "data/tokenizer.h"
#include "data/temp_dir_test.h"

namespace zero::data {
namespace {

namespace fs = std::filesystem;

using DataTest = testing::TempDirTest;

using testing::error_of;

std::string gzip_bytes(std::string_view bytes) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::vector<std::uint16_t> ramp(int n, int modulo) {
  std::vector<std::uint16_t> tokens(n);
  for (int i = 0; i < n; ++i) tokens[i] = static_cast<std::uint16_t>((i * 7 + 3) % modulo);
  return tokens;
}

const char* kProse = "Ça va? The naïve café — 日本語, 🙂.\nSecond line.\n";

// ---- tokenizer -------------------------------------------------------------------------------

TEST(Tokenizer, RoundTripsAnyUtf8Text) {
  const std::string text = kProse;
  const std::vector<std::uint16_t> tokens = ByteTokenizer::encode_bytes(text);
  ASSERT_EQ(tokens.size(), text.size());  // one token per byte
  for (std::uint16_t t : tokens) EXPECT_LT(t, ByteTokenizer::kVocabSize);
  EXPECT_EQ(ByteTokenizer::decode_bytes(tokens), text);
  EXPECT_EQ(ByteTokenizer::encode_bytes("A")[0], 65);
}

TEST(Tokenizer, DecodeRejectsNonByteTokens) {
  const std::vector<std::uint16_t> tokens = {65, 300};
  EXPECT_NE(error_of([&] { ByteTokenizer::decode_bytes(tokens); }).find("token 300 at position 1 is not a byte"),
            std::string::npos);
}

TEST(Tokenizer, Utf8Validation) {
  EXPECT_EQ(utf8_error_offset(kProse), std::string_view::npos);
  EXPECT_EQ(utf8_error_offset("ab\xFF"), 2u);          // never a UTF-8 byte
  EXPECT_EQ(utf8_error_offset("ab\xC3"), 2u);          // cut off
  EXPECT_EQ(utf8_error_offset("\xC0\xAF"), 0u);        // overlong '/'
  EXPECT_EQ(utf8_error_offset("x\xED\xA0\x80"), 1u);   // surrogate U+D800
  EXPECT_EQ(utf8_error_offset("\xF4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(utf8_error_offset("\xF0\x9F\x99\x82"), std::string_view::npos);
}

TEST(Tokenizer, PrintableTextIsValidUtf8WithoutControls) {
  EXPECT_EQ(printable_text(kProse), kProse);  // valid text is left alone
  const std::string sample = "ok\xFF\xC3 \x1B[31mred\r\tx\n\xE6\x97";  // bad bytes, ESC, CR, a cut character
  const std::string shown = printable_text(sample);
  EXPECT_EQ(utf8_error_offset(shown), std::string_view::npos);
  EXPECT_EQ(shown, "ok\uFFFD\uFFFD \uFFFD[31mred\uFFFD\tx\n\uFFFD\uFFFD");
}

// ---- .bin files ------------------------------------------------------------------------------

TEST_F(DataTest, TokenFileRoundTrip) {
  const std::vector<std::uint16_t> tokens = ramp(1000, 50257);
  write_token_file(path("a.bin"), tokens);
  EXPECT_EQ(fs::file_size(path("a.bin")), 1024u + 2 * tokens.size());  // llm.c's layout exactly
  const TokenData data = read_token_file(path("a.bin"));
  EXPECT_EQ(data.tokens.to_vector(), tokens);
  EXPECT_EQ(data.vocab_size, kGpt2VocabSize);  // header[3] = 0: GPT-2, as llm.c's files are
  EXPECT_EQ(data.format, "bin");
  EXPECT_FALSE(fs::exists(path("a.bin.partial")));

  write_token_file(path("b.bin"), ramp(100, 256), 256);  // a stated vocabulary is kept
  EXPECT_EQ(load_tokens(path("b.bin"), "auto").vocab_size, 256);
}

TEST_F(DataTest, TokenFileHeaderIsLlmcs) {
  write_token_file(path("a.bin"), ramp(10, 100));
  std::ifstream in(path("a.bin"), std::ios::binary);
  std::int32_t header[256];
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], 10);
  for (int i = 3; i < 256; ++i) EXPECT_EQ(header[i], 0) << i;
}

TEST_F(DataTest, TokenFileErrors) {
  std::string good(1024 + 2 * 10, '\0');
  const std::int32_t head[4] = {20240520, 1, 10, 0};
  std::memcpy(good.data(), head, sizeof(head));

  std::string bad_magic = good;
  bad_magic[0] = 1;
  EXPECT_NE(error_of([&] { load_tokens(write("m.bin", bad_magic)); }).find("m.bin has a bad magic number"),
            std::string::npos);

  const std::string truncated = good.substr(0, good.size() - 3);
  const std::string msg = error_of([&] { load_tokens(write("t.bin", truncated)); });
  EXPECT_NE(msg.find("t.bin is truncated: its header says 10 tokens (1044 bytes) but the file has 1041 bytes"),
            std::string::npos) << msg;
  EXPECT_NE(error_of([&] { load_tokens(write("h.bin", good.substr(0, 100))); }).find("less than the 1024-byte header"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_tokens(write("x.bin", good + "xx")); }).find("has 1046 bytes but its header says 10"),
            std::string::npos);

  std::string version = good;
  version[4] = 2;
  EXPECT_NE(error_of([&] { load_tokens(write("v.bin", version)); }).find("has version 2"), std::string::npos);

  std::string llama = good;
  const std::int32_t llama_magic = 20240801;
  std::memcpy(llama.data(), &llama_magic, 4);
  EXPECT_NE(error_of([&] { load_tokens(write("l.bin", llama)); }).find("Llama 3 token file"), std::string::npos);

  std::string none(1024, '\0');
  const std::int32_t empty_head[3] = {20240520, 1, 0};
  std::memcpy(none.data(), empty_head, sizeof(empty_head));
  EXPECT_NE(error_of([&] { load_tokens(write("e.bin", none)); }).find("e.bin is empty"), std::string::npos);
}

// ---- loading ---------------------------------------------------------------------------------

TEST_F(DataTest, LoadsTextByExtensionAndFormat) {
  const TokenData text = load_tokens(write("prose.txt", kProse));
  EXPECT_EQ(text.format, "text");
  EXPECT_EQ(text.vocab_size, 256);
  EXPECT_EQ(ByteTokenizer::decode_bytes(text.tokens.to_vector()), kProse);
  EXPECT_EQ(load_tokens(write("noext", kProse), "auto").format, "text");  // anything not .bin is text

  write_token_file(path("tok.dat"), ramp(20, 256));  // a token file under another name
  EXPECT_EQ(load_tokens(path("tok.dat"), "bin").tokens.to_vector(), ramp(20, 256));
  EXPECT_EQ(load_tokens(write("p.bin", kProse), "text").format, "text");  // the format overrides the name
}

TEST_F(DataTest, LoadsGzippedFiles) {
  const std::string text = std::string(kProse) + std::string(5000, 'z');
  EXPECT_EQ(ByteTokenizer::decode_bytes(load_tokens(write("p.txt.gz", gzip_bytes(text))).tokens.to_vector()), text);
  // Two gzip members concatenated decompress to both, as gunzip does.
  EXPECT_EQ(gunzip(gzip_bytes("ab") + gzip_bytes("cd"), "two.gz"), "abcd");

  write_token_file(path("t.bin"), ramp(30, 256));
  std::ifstream in(path("t.bin"), std::ios::binary);
  const std::string bin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(load_tokens(write("t.bin.gz", gzip_bytes(bin))).tokens.to_vector(), ramp(30, 256));

  const std::string cut = gzip_bytes(text).substr(0, 40);
  EXPECT_NE(error_of([&] { load_tokens(write("cut.txt.gz", cut)); }).find("cut.txt.gz is a truncated gzip file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_tokens(write("empty.txt.gz", gzip_bytes(""))); }).find("empty once decompressed"),
            std::string::npos);
}

TEST_F(DataTest, LoadErrors) {
  const std::string missing = path("nope.txt");
  EXPECT_NE(error_of([&] { load_tokens(missing); }).find(missing + " does not exist"), std::string::npos);
  EXPECT_NE(error_of([&] { load_tokens(write("empty.txt", "")); }).find("empty.txt is empty"), std::string::npos);
  EXPECT_NE(error_of([&] { load_tokens(write("empty.bin", "")); }).find("empty.bin is empty"), std::string::npos);
  EXPECT_NE(error_of([&] { load_tokens(dir_.string()); }).find("is a directory"), std::string::npos);

  const std::string latin1 = "caf\xE9 au lait\nna\xEFve\n";
  const std::string msg = error_of([&] { load_tokens(write("latin1.txt", latin1)); });
  EXPECT_NE(msg.find("latin1.txt is not valid UTF-8 text: byte 0xE9 at offset 3 (line 1)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("iconv -f latin1"), std::string::npos);
  for (const std::string& bom : {std::string("\xFF\xFE"), std::string("\xFE\xFF")}) {  // UTF-16, either byte order
    const std::string u16 = error_of([&] { load_tokens(write("utf16.txt", bom + std::string("h\0i\0", 4))); });
    EXPECT_NE(u16.find("starts with a UTF-16 byte-order mark: convert it with iconv -f utf-16 -t utf-8"), std::string::npos) << u16;
  }

  EXPECT_THROW(load_tokens(write("a.txt", kProse), "csv"), ConfigError);
  EXPECT_NE(error_of([&] { load_tokens(path("a.txt"), "csv"); }).find("unknown data format 'csv'"), std::string::npos);
}

TEST_F(DataTest, ContentThatContradictsTheName) {
  // A .bin that is really text.
  const std::string text_as_bin = error_of([&] { load_tokens(write("notes.bin", kProse)); });
  EXPECT_NE(text_as_bin.find("notes.bin is text, not an llm.c token file"), std::string::npos) << text_as_bin;
  // A token file that is named as text.
  write_token_file(path("tokens.txt"), ramp(50, 256));
  const std::string bin_as_text = error_of([&] { load_tokens(path("tokens.txt")); });
  EXPECT_NE(bin_as_text.find("tokens.txt is an llm.c token file"), std::string::npos) << bin_as_text;
  EXPECT_NE(bin_as_text.find("name it *.bin"), std::string::npos);
}

// ---- shards: spans joined, patterns of files --------------------------------------------------

// Joined spans read as their concatenation: every read, sub-span and largest token, for random cut
// points (empty parts included) and random windows, against the concatenated vector.
TEST(TokenSpanJoin, ReadsAsTheConcatenation) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 300);
    std::vector<std::uint16_t> all(n);
    for (auto& t : all) t = static_cast<std::uint16_t>(rng() % 50257);
    const int parts = 1 + static_cast<int>(rng() % 6);
    std::vector<int> cuts = {0, n};
    for (int i = 1; i < parts; ++i) cuts.push_back(static_cast<int>(rng() % (n + 1)));
    std::sort(cuts.begin(), cuts.end());
    const TokenSpan whole(all);
    std::vector<TokenSpan> spans;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) spans.push_back(whole.subspan(cuts[i], cuts[i + 1] - cuts[i]));
    TokenSpan joined = TokenSpan::join(spans);
    if (trial % 3 == 0 && spans.size() > 1) {  // a joined span joined again is flattened
      joined = TokenSpan::join({TokenSpan::join({spans.begin(), spans.end() - 1}), spans.back()});
    }
    ASSERT_EQ(joined.size(), all.size());
    EXPECT_EQ(joined.to_vector(), all);
    EXPECT_EQ(joined.max_token(), *std::max_element(all.begin(), all.end()));
    for (int w = 0; w < 20; ++w) {
      const std::size_t off = rng() % (n + 1), count = rng() % (n - off + 1);
      const TokenSpan sub = joined.subspan(off, count);
      const std::vector<std::uint16_t> want(all.begin() + off, all.begin() + off + count);
      EXPECT_EQ(sub.to_vector(), want);
      if (count > 0) {
        const std::size_t off2 = rng() % count, count2 = rng() % (count - off2 + 1);
        EXPECT_EQ(sub.subspan(off2, count2).to_vector(), std::vector<std::uint16_t>(want.begin() + off2, want.begin() + off2 + count2));
        EXPECT_EQ(sub[off2], want[off2]);
      }
    }
  }
}

TEST_F(DataTest, PatternOfShardsIsTheConcatenatedFile) {
  std::mt19937 rng(11);
  std::vector<std::uint16_t> all(5000);
  for (auto& t : all) t = static_cast<std::uint16_t>(rng() % 50257);
  write_token_file(path("whole.bin"), all);
  fs::create_directories(path("shards"));
  const int cuts[] = {0, 1, 1700, 1701, 4999, 5000};
  for (int i = 0; i + 1 < 6; ++i) {
    const std::span<const std::uint16_t> part(all.data() + cuts[i], cuts[i + 1] - cuts[i]);
    write_token_file(path("shards/train_" + std::to_string(100 + i) + ".bin"), part);
  }
  write_token_file(path("shards/val_000.bin"), ramp(10, 256));  // not matched
  const TokenData shards = load_tokens(path("shards/train_*.bin"));
  EXPECT_EQ(shards.tokens.to_vector(), load_tokens(path("whole.bin")).tokens.to_vector());
  EXPECT_EQ(shards.format, "bin");
  EXPECT_EQ(shards.vocab_size, kGpt2VocabSize);
  EXPECT_EQ(shards.mapped_bytes, 5 * 1024 + 2 * all.size());  // each shard mapped, none copied
  EXPECT_EQ(shards.private_bytes, 0U);
  EXPECT_EQ(data_files(path("shards/train_*.bin")).size(), 5U);
  EXPECT_EQ(data_files(path("shards/train_10[0-1].bin")), (std::vector<std::string>{path("shards/train_100.bin"), path("shards/train_101.bin")}));
  // Text shards through a tokenizer: the tokens of each file, one after another.
  write("t/a.txt", "hello ");
  write("t/b.txt", "world");
  EXPECT_EQ(load_tokens(path("t/*.txt")).tokens.to_vector(), load_tokens(write("ab.txt", "hello world")).tokens.to_vector());
}

TEST_F(DataTest, PatternErrors) {
  const std::string none = error_of([&] { load_tokens(path("nowhere/train_*.bin")); });
  EXPECT_NE(none.find("train_*.bin matches no file"), std::string::npos) << none;
  fs::create_directories(path("mix"));
  write_token_file(path("mix/a.bin"), ramp(10, 256));
  write("mix/b.txt", "some text");
  const std::string mixed = error_of([&] { load_tokens(path("mix/*")); });
  EXPECT_NE(mixed.find("matches files of different kinds"), std::string::npos) << mixed;
  EXPECT_NE(mixed.find("a.bin (llm.c .bin, 2-byte tokens) and "), std::string::npos) << mixed;
  // A bad shard is named as itself.
  write("bad/a.bin", "not tokens at all, just text");
  write_token_file(path("bad/b.bin"), ramp(10, 256));
  const std::string bad = error_of([&] { load_tokens(path("bad/*.bin")); });
  EXPECT_NE(bad.find("a.bin is text, not an llm.c token file"), std::string::npos) << bad;
}

// ---- split and batches -----------------------------------------------------------------------

TokenData byte_data(int n) {
  return tokens_in_memory(ramp(n, 256), 256, "mem.txt", "text");
}

TEST(Split, HoldsOutTheLastFraction) {
  const TokenData data = byte_data(1000);
  const TokenSplit split = split_tokens(data, 0.1, 16);
  EXPECT_EQ(split.train.size(), 900u);
  EXPECT_EQ(split.validation.size(), 100u);
  EXPECT_TRUE(split.validation.same_bytes(data.tokens.last(100)));  // the last tokens, in place
  EXPECT_TRUE(split_tokens(data, 0.0, 16).validation.empty());
}

TEST(Split, ShorterThanOneSequence) {
  const std::string val = error_of([] { split_tokens(byte_data(1000), 0.1, 128); });
  EXPECT_NE(val.find("mem.txt is shorter than one sequence: its validation split has 100 of its 1000 tokens, "
                     "but a sequence of seq_len 128 needs 129"), std::string::npos) << val;
  EXPECT_NE(val.find("the file needs at least 1290 tokens"), std::string::npos) << val;
  const std::string train = error_of([] { split_tokens(byte_data(50), 0.0, 64); });
  EXPECT_NE(train.find("its training split has 50 of its 50 tokens, but a sequence of seq_len 64 needs 65"),
            std::string::npos) << train;
  EXPECT_NE(train.find("at least 65 tokens"), std::string::npos);
  EXPECT_THROW(split_tokens(byte_data(1000), 1.0, 8), ConfigError);
}

TEST(Batches, SlicesTileBatches) {
  for (int n : {1, 2, 3, 4}) {
    int next = 0;
    for (int r = 0; r < n; ++r) {
      const SequenceRange s = batch_slice(10, n, r);
      EXPECT_EQ(s.first, next);
      next += s.count;
      int micro_next = s.first;
      for (int m = 0; m < 3; ++m) {
        const SequenceRange mb = micro_batch_slice(10, n, r, 3, m);
        EXPECT_EQ(mb.first, micro_next);
        micro_next += mb.count;
      }
      EXPECT_EQ(micro_next, s.first + s.count);
    }
    EXPECT_EQ(next, 10);
  }
}

TEST(Batches, GlobalBatchIsTheSameForEveryWorldSize) {
  const TokenData data = byte_data(5000);
  const TokenBatches batches(data.tokens, 16, 1234);
  constexpr int kBatch = 12, kT = 16;
  for (std::int64_t step : {0, 1, 7}) {
    std::vector<std::int32_t> whole_in(kBatch * kT), whole_tg(kBatch * kT);
    batches.fill(step, 0, kBatch, whole_in.data(), whole_tg.data());
    for (int n : {1, 2, 3, 4}) {
      std::vector<std::int32_t> in, tg;  // the ranks' slices, concatenated in rank order
      for (int r = 0; r < n; ++r) {
        const SequenceRange s = batch_slice(kBatch, n, r);
        std::vector<std::int32_t> rin(s.count * kT), rtg(s.count * kT);
        batches.fill(step, s.first, s.count, rin.data(), rtg.data());
        in.insert(in.end(), rin.begin(), rin.end());
        tg.insert(tg.end(), rtg.begin(), rtg.end());
      }
      EXPECT_EQ(in, whole_in) << "step " << step << ", " << n << " ranks";
      EXPECT_EQ(tg, whole_tg) << "step " << step << ", " << n << " ranks";
    }
  }
}

// The digest of a global batch is the sum of its slices' digests however it is cut (ranks and
// micro-batches), and tells apart another step, one token changed, and two sequences swapped.
TEST(Batches, DigestAddsUpOverSlicesAndSeesChanges) {
  const TokenData data = byte_data(5000);
  const TokenBatches batches(data.tokens, 16, 1234);
  constexpr int kBatch = 12, kT = 16;
  std::vector<std::int32_t> in(kBatch * kT), tg(kBatch * kT);
  batches.fill(3, 0, kBatch, in.data(), tg.data());
  const std::uint64_t whole = batch_digest(0, kBatch, kT, in.data(), tg.data());
  for (int n : {1, 2, 3, 4, 6, 12}) {
    for (int a : {1, 2}) {
      if (kBatch % (n * a) != 0) continue;
      std::uint64_t sum = 0;
      for (int r = 0; r < n; ++r) {
        for (int m = 0; m < a; ++m) {
          const SequenceRange s = micro_batch_slice(kBatch, n, r, a, m);
          std::vector<std::int32_t> sin(s.count * kT), stg(s.count * kT);
          batches.fill(3, s.first, s.count, sin.data(), stg.data());
          sum += batch_digest(s.first, s.count, kT, sin.data(), stg.data());
        }
      }
      EXPECT_EQ(sum, whole) << n << " ranks, " << a << " micro-batches";
    }
  }
  std::vector<std::int32_t> in4(kBatch * kT), tg4(kBatch * kT);
  batches.fill(4, 0, kBatch, in4.data(), tg4.data());
  EXPECT_NE(batch_digest(0, kBatch, kT, in4.data(), tg4.data()), whole);
  std::vector<std::int32_t> changed = in;
  changed[5 * kT + 3] ^= 1;
  EXPECT_NE(batch_digest(0, kBatch, kT, changed.data(), tg.data()), whole);
  std::vector<std::int32_t> last = tg;
  last[2 * kT + kT - 1] ^= 1;  // the last target: the one token of a sequence not among its inputs
  EXPECT_NE(batch_digest(0, kBatch, kT, in.data(), last.data()), whole);
  std::vector<std::int32_t> swapped = in, swapped_tg = tg;
  std::swap_ranges(swapped.begin(), swapped.begin() + kT, swapped.begin() + kT);
  std::swap_ranges(swapped_tg.begin(), swapped_tg.begin() + kT, swapped_tg.begin() + kT);
  EXPECT_NE(batch_digest(0, kBatch, kT, swapped.data(), swapped_tg.data()), whole);
}

TEST(Batches, TargetsAreInputsShiftedByOne) {
  const TokenData data = byte_data(3000);
  const TokenBatches batches(data.tokens, 8, 7);
  std::vector<std::int32_t> in(4 * 8), tg(4 * 8);
  batches.fill(3, 0, 4, in.data(), tg.data());
  for (int i = 0; i < 4; ++i) {
    const std::int64_t off = batches.sequence_offset(3, i);
    ASSERT_GE(off, 0);
    ASSERT_LE(off + 8, 2999);  // the last target is inside the tokens
    for (int t = 0; t < 8; ++t) {
      EXPECT_EQ(in[i * 8 + t], data.tokens[off + t]);
      EXPECT_EQ(tg[i * 8 + t], data.tokens[off + t + 1]);
    }
  }
}

TEST(Batches, OffsetsDependOnSeedStepAndSequenceOnly) {
  const TokenData data = byte_data(100000);
  const TokenBatches a(data.tokens, 32, 1), again(data.tokens, 32, 1), other(data.tokens, 32, 2);
  int differ_seed = 0, differ_step = 0;
  std::int64_t lowest = 1 << 30, highest = 0;
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(a.sequence_offset(5, i), again.sequence_offset(5, i));
    differ_seed += a.sequence_offset(5, i) != other.sequence_offset(5, i);
    differ_step += a.sequence_offset(5, i) != a.sequence_offset(6, i);
    lowest = std::min(lowest, a.sequence_offset(5, i));
    highest = std::max(highest, a.sequence_offset(5, i));
  }
  EXPECT_GT(differ_seed, 190);
  EXPECT_GT(differ_step, 190);
  EXPECT_LT(lowest, 5000);  // spread over the whole split
  EXPECT_GT(highest, 95000);
}

TEST(Batches, SmallestSplitUsesItsOnlySequence) {
  const TokenData data = byte_data(9);
  const TokenBatches batches(data.tokens, 8, 99);  // exactly T+1 tokens: one possible offset
  for (int i = 0; i < 5; ++i) EXPECT_EQ(batches.sequence_offset(i, i), 0);
  EXPECT_THROW(TokenBatches(data.tokens.first(8), 8, 1), Error);
}

TEST(Validation, WindowsAreFixedAndDisjoint) {
  const TokenData data = byte_data(1000);
  const ValidationWindows all(data.tokens, 10, 0);
  EXPECT_EQ(all.count(), 99);  // (1000 - 1) / 10
  const ValidationWindows first(data.tokens, 10, 5);
  ASSERT_EQ(first.count(), 5);
  std::vector<std::int32_t> in(5 * 10), tg(5 * 10), in2(5 * 10), tg2(5 * 10);
  first.fill(0, 5, in.data(), tg.data());
  for (int w = 0; w < 5; ++w) {
    EXPECT_EQ(first.offset(w), w * 10);
    for (int t = 0; t < 10; ++t) {
      EXPECT_EQ(in[w * 10 + t], data.tokens[w * 10 + t]);
      EXPECT_EQ(tg[w * 10 + t], data.tokens[w * 10 + t + 1]);
    }
  }
  first.fill(0, 5, in2.data(), tg2.data());  // the same every time
  EXPECT_EQ(in, in2);
  EXPECT_EQ(tg, tg2);
  EXPECT_THROW(ValidationWindows(data.tokens.first(5), 10, 0), Error);
}

// ---- the default text ------------------------------------------------------------------------

TEST(DefaultText, IsInstalledProse) {
  if (!fs::exists(kDefaultTextPath)) {
    EXPECT_NE(error_of([] { default_text_path(); }).find("run scripts/setup.sh"), std::string::npos);
    GTEST_SKIP() << kDefaultTextPath << " is not installed: run scripts/setup.sh (Debian package "
                 << kDefaultTextPackage << ")";
  }
  const TokenData data = load_tokens(default_text_path());
  EXPECT_EQ(data.vocab_size, 256);
  EXPECT_GT(data.tokens.size(), 1'000'000u);
  const std::string text = ByteTokenizer::decode_bytes(data.tokens.to_vector());
  EXPECT_NE(text.find("hacker"), std::string::npos);
  const TokenSplit split = split_tokens(data, 0.1, 256);
  EXPECT_GT(split.validation.size(), 100'000u);
}

}  // namespace
}  // namespace zero::data
