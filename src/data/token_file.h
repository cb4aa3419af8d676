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
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/token_span.h"

namespace zero::data {

// GPT-2's vocabulary (50,000 merges + 256 bytes + <|endoftext|>): the vocabulary implied by an
// llm.c .bin that does not state its own.
inline constexpr int kGpt2VocabSize = 50257;

struct TokenData {
  TokenSpan tokens;  // (count) the whole file, in order, where `storage` holds it
  // The model's vocabulary for these tokens: 256 for text (bytes); for a .bin the size in its
  // header if set, else GPT-2's 50257 (or max token + 1 if a token is larger). Every token is
  // below it.
  int vocab_size = 0;
  std::string source;  // the file it came from, for messages
  std::string format;  // "text" or "bin"
  // What holds the tokens' bytes: the data file's read-only shared mapping (common/mapped_file.h),
  // or this process's memory (a decompressed gzip file, tokens made in memory).
  std::shared_ptr<const void> storage;
  // Resident bytes the tokens cost: `mapped_bytes` once per host (the page cache's, shared by every
  // process that maps the file), `private_bytes` once per process.
  std::uint64_t mapped_bytes = 0;
  std::uint64_t private_bytes = 0;
};

// TokenData over bytes it holds itself: `bytes`, moved into its storage and read by `view`
// (view_token_file, or load.h's text view) in place.
TokenData view_held_bytes(std::string bytes, const std::function<TokenData(std::string_view)>& view);

// TokenData holding its own copy of `tokens` (format "bin" unless given).
TokenData tokens_in_memory(std::vector<std::uint16_t> tokens, int vocab_size, std::string source,
                           std::string format = "bin");

namespace token_file {
inline constexpr std::int32_t kMagic = 20240520;
inline constexpr std::int32_t kVersion = 1;
inline constexpr std::int32_t kLlama3Magic = 20240801;
inline constexpr int kHeaderInts = 256;
inline constexpr std::size_t kHeaderBytes = kHeaderInts * sizeof(std::int32_t);  // 1024
}  // namespace token_file

// Parses the bytes of a .bin file into tokens of its own; `name` is the file named in errors. Throws zero::Error
// ("[data] <name> ...") for a wrong magic (saying so when the bytes are text), a version other
// than 1, a header cut short, no tokens, a size that disagrees with the header's count, or a
// token not below the header's vocabulary size.
TokenData parse_token_file(std::string_view bytes, const std::string& name);

// The same checks, the tokens left where they are: in `bytes`, which lie in `file`'s mapping
// (nullptr: in memory); the caller sets the storage that keeps them.
TokenData view_token_file(std::string_view bytes, const std::string& name, const MappedFile* file);

// Reads and parses a .bin file (see parse_token_file; a missing file is an error too): load_tokens.
TokenData read_token_file(const std::string& path);

// Writes `tokens` as a .bin that llm.c reads. `vocab_size` > 0 is recorded in header[3] (every
// token must be below it); 0 leaves it unspecified, as llm.c does. The file appears complete or
// not at all (common/output_file.h: written beside `path`, then renamed into place).
void write_token_file(const std::string& path, std::span<const std::uint16_t> tokens, int vocab_size = 0);

// True when `bytes` begin with the llm.c magic: used to name the mistake when a token file is
// loaded as text.
bool has_token_file_magic(std::string_view bytes);

}  // namespace zero::data
