// Token data and llm.c's pre-tokenized `.bin` format, so users can bring data sets tokenized
// for GPT-2 by llm.c's dev/data scripts (write_datafile in dev/data/data_common.py):
//
//   header  256 x int32, little-endian
//             [0] magic 20240520
//             [1] version 1 (GPT-2: uint16 tokens)
//             [2] number of tokens that follow
//             [3] vocabulary size: zero's extension; llm.c writes 0 here, meaning "unspecified"
//             [4..255] 0
//   tokens  count x uint16, little-endian
//
// The file is exactly 1024 + 2*count bytes, which is what llm.c's dataloader checks too.
// llm.c's other format (magic 20240801, version 7, uint32 tokens for Llama 3) is recognised and
// refused with a message, not misread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zero::data {

// GPT-2's vocabulary (50,000 merges + 256 bytes + <|endoftext|>): the vocabulary implied by an
// llm.c .bin that does not state its own.
inline constexpr int kGpt2VocabSize = 50257;

struct TokenData {
  std::vector<std::uint16_t> tokens;  // (count) the whole file, in order
  // The model's vocabulary for these tokens: 256 for text (bytes); for a .bin the size in its
  // header if set, else GPT-2's 50257 (or max token + 1 if a token is larger). Every token is
  // below it.
  int vocab_size = 0;
  std::string source;  // the file it came from, for messages
  std::string format;  // "text" or "bin"
};

namespace token_file {
inline constexpr std::int32_t kMagic = 20240520;
inline constexpr std::int32_t kVersion = 1;
inline constexpr std::int32_t kLlama3Magic = 20240801;
inline constexpr int kHeaderInts = 256;
inline constexpr std::size_t kHeaderBytes = kHeaderInts * sizeof(std::int32_t);  // 1024
}  // namespace token_file

// Parses the bytes of a .bin file; `name` is the file named in errors. Throws zero::Error
// ("[data] <name> ...") for a wrong magic (saying so when the bytes are text), a version other
// than 1, a header cut short, no tokens, a size that disagrees with the header's count, or a
// token not below the header's vocabulary size.
TokenData parse_token_file(std::string_view bytes, const std::string& name);

// Reads and parses a .bin file (see parse_token_file; a missing file is an error too).
TokenData read_token_file(const std::string& path);

// Writes `tokens` as a .bin that llm.c reads. `vocab_size` > 0 is recorded in header[3] (every
// token must be below it); 0 leaves it unspecified, as llm.c does. The file appears complete or
// not at all (common/output_file.h: written beside `path`, then renamed into place).
void write_token_file(const std::string& path, std::span<const std::uint16_t> tokens, int vocab_size = 0);

// True when `bytes` begin with the llm.c magic: used to name the mistake when a token file is
// loaded as text.
bool has_token_file_magic(std::string_view bytes);

}  // namespace zero::data
