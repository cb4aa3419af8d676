// SentencePiece through zero against Debian's spm_encode: the test trains small models with
// spm_train (bpe and unigram, a few hundred milliseconds each) on a license text, then zero's ids
// must equal `spm_encode --output_format=id` on several files. spm_encode takes one sentence a
// line, so both sides encode line by line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/error_of.h"
#include "data/temp_dir_test.h"
#include "data/tokenizer.h"

namespace zero::data {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

const char* kTrainText = "/usr/share/common-licenses/GPL-3";
const char* kFiles[] = {"/usr/share/common-licenses/GPL-3", "/usr/share/common-licenses/Apache-2.0",
                        "/usr/share/common-licenses/Artistic", "/usr/share/common-licenses/MPL-2.0"};

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class SentencePieceTest : public testing::TempDirTest {
 protected:
  // Trains a model with spm_train; returns its path.
  std::string train(const std::string& name, const std::string& options) const {
    const std::string prefix = (dir_ / name).string();
    const std::string command = cat("spm_train --input=", kTrainText, " --model_prefix=", prefix,
                                    " --minloglevel=2 ", options, " >/dev/null 2>&1");
    EXPECT_EQ(std::system(command.c_str()), 0) << command << " (spm_train is Debian's package sentencepiece)";
    return prefix + ".model";
  }
  // spm_encode's ids of each line of `file`.
  std::vector<std::vector<TokenId>> spm_encode(const std::string& model, const std::string& file) const {
    const fs::path out = dir_ / "ids.txt";
    const std::string command = cat("spm_encode --model=", model, " --output_format=id <", file, " >", out.string());
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    std::vector<std::vector<TokenId>> lines;
    for (const std::string& line : lines_of(out.string())) {
      std::istringstream in(line);
      lines.emplace_back();
      for (TokenId id; in >> id;) lines.back().push_back(id);
    }
    return lines;
  }
};

TEST_F(SentencePieceTest, IdsEqualSpmEncode) {
  for (const char* type : {"bpe", "unigram"}) {
    for (int vocab : {300, 1000}) {
      const std::string model = train(cat(type, vocab), cat("--model_type=", type, " --vocab_size=", vocab));
      const auto tokenizer = open_tokenizer(model);
      EXPECT_EQ(tokenizer->vocab_size(), static_cast<std::size_t>(vocab));
      EXPECT_EQ(tokenizer->end_of_text(), TokenId{2});  // spm_train's default </s>
      for (const char* file : kFiles) {
        const std::vector<std::string> lines = lines_of(file);
        const auto expected = spm_encode(model, file);
        ASSERT_EQ(expected.size(), lines.size()) << file;
        for (std::size_t i = 0; i < lines.size(); ++i) {
          ASSERT_EQ(tokenizer->encode(lines[i]), expected[i]) << type << " " << vocab << ", " << file << " line " << i + 1;
        }
      }
    }
  }
}

// A model with identity normalisation, whitespace kept and byte fallback: SentencePiece's
// lossless setting, where decode(encode(x)) == x, also for characters the training text lacks.
TEST_F(SentencePieceTest, LosslessModelRoundTrips) {
  const auto tokenizer = open_tokenizer(train("lossless", "--model_type=bpe --vocab_size=600 --normalization_rule_name=identity "
                                                          "--remove_extra_whitespaces=false --byte_fallback=true"));
  for (const char* file : kFiles) {
    for (const std::string& line : lines_of(file)) ASSERT_EQ(tokenizer->decode(tokenizer->encode(line)), line) << file;
  }
  const std::string unseen = "  Ça va?  日本語 🙂\tend ";
  EXPECT_EQ(tokenizer->decode(tokenizer->encode(unseen)), unseen);
}

TEST_F(SentencePieceTest, BadModelsAreNamedErrors) {
  const fs::path fake = dir_ / "tokenizer.model";
  std::ofstream(fake) << "{\"not\": \"a model\"}";
  EXPECT_NE(error_of([&] { open_tokenizer(fake.string()); }).find("is not a SentencePiece model"), std::string::npos);
  EXPECT_NE(error_of([&] { open_tokenizer(dir_.string()); }).find("is not a SentencePiece model"), std::string::npos);
  const auto tokenizer = open_tokenizer(train("small", "--model_type=unigram --vocab_size=300"));
  const TokenId bad[] = {5, 300};
  EXPECT_NE(error_of([&] { tokenizer->decode(bad); }).find("token 300 at position 1 is not in the vocabulary"),
            std::string::npos);
}

}  // namespace
}  // namespace zero::data
