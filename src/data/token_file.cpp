#include "data/token_file.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "common/error.h"
#include "common/output_file.h"
#include "data/file_io.h"
#include "data/tokenizer.h"

namespace zero::data {
namespace {

// The format is little-endian and we copy it with memcpy.
static_assert(std::endian::native == std::endian::little, "zero's .bin reader assumes a little-endian host");

using token_file::kHeaderBytes;
using token_file::kHeaderInts;

std::int32_t header_int(std::string_view bytes, int index) {
  std::int32_t value = 0;
  std::memcpy(&value, bytes.data() + index * sizeof(std::int32_t), sizeof(value));
  return value;
}

// Throws when the first int is not llm.c's GPT-2 magic, naming what the file seems to be.
void check_magic(std::string_view bytes, const std::string& name) {
  if (has_token_file_magic(bytes)) return;
  if (bytes.size() >= 4 && header_int(bytes, 0) == token_file::kLlama3Magic) {
    throw Error(cat("[data] ", name, " is an llm.c Llama 3 token file (magic ", token_file::kLlama3Magic,
                    ", uint32 tokens); zero reads GPT-2 token files (magic ", token_file::kMagic,
                    ", uint16 tokens): re-tokenize the data for GPT-2"));
  }
  if (looks_like_text(bytes)) {
    throw Error(cat("[data] ", name, " is text, not an llm.c token file (its header lacks the magic ",
                    token_file::kMagic, "): name it .txt, or load it with format 'text'"));
  }
  if (bytes.size() < 4) {
    throw Error(cat("[data] ", name, " is truncated: ", bytes.size(), " bytes, less than the ", kHeaderBytes,
                    "-byte header of an llm.c token file; re-create it"));
  }
  throw Error(cat("[data] ", name, " has a bad magic number ", header_int(bytes, 0), " (expected ", token_file::kMagic,
                  "): it is not an llm.c token file; create it with llm.c's dev/data scripts or zero's writer"));
}

// Checks the header against the file's size; returns the token count.
std::int64_t check_header(std::string_view bytes, const std::string& name) {
  check_magic(bytes, name);
  if (bytes.size() < kHeaderBytes) {
    throw Error(cat("[data] ", name, " is truncated: ", bytes.size(), " bytes, less than the ", kHeaderBytes,
                    "-byte header of an llm.c token file; re-create it"));
  }
  const std::int32_t version = header_int(bytes, 1);
  if (version != token_file::kVersion) {
    throw Error(cat("[data] ", name, " has version ", version, "; zero reads version ", token_file::kVersion,
                    " (GPT-2 uint16 tokens), as llm.c writes it: re-create the file"));
  }
  const std::int64_t count = header_int(bytes, 2);
  if (count <= 0) {
    throw Error(cat("[data] ", name, " is empty: its header says it holds ", count,
                    " tokens; pass a file with tokens in it"));
  }
  const std::int64_t expected = static_cast<std::int64_t>(kHeaderBytes) + 2 * count;
  const auto actual = static_cast<std::int64_t>(bytes.size());
  if (actual < expected) {
    throw Error(cat("[data] ", name, " is truncated: its header says ", count, " tokens (", expected,
                    " bytes) but the file has ", actual, " bytes; re-create or re-download it"));
  }
  if (actual > expected) {
    throw Error(cat("[data] ", name, " has ", actual, " bytes but its header says ", count, " tokens (",
                    expected, " bytes): the file is damaged or not an llm.c token file; re-create it"));
  }
  return count;
}

}  // namespace

bool has_token_file_magic(std::string_view bytes) {
  return bytes.size() >= sizeof(std::int32_t) && header_int(bytes, 0) == token_file::kMagic;
}

TokenData view_token_file(std::string_view bytes, const std::string& name, const MappedFile* file) {
  const std::int64_t count = check_header(bytes, name);
  TokenData data;
  data.source = name;
  data.format = "bin";
  data.tokens = TokenSpan(reinterpret_cast<const unsigned char*>(bytes.data()) + kHeaderBytes,
                          static_cast<std::size_t>(count), 2, file);
  const int max_token = data.tokens.max_token();
  const std::int32_t stated_vocab = header_int(bytes, 3);
  if (stated_vocab > 0) {
    if (max_token >= stated_vocab) {
      throw Error(cat("[data] ", name, " holds token ", max_token, " but its header gives a vocabulary of ",
                      stated_vocab, " tokens: the file is damaged; re-create it"));
    }
    data.vocab_size = stated_vocab;
  } else {
    // llm.c's version-1 files are GPT-2 tokens; a larger token means some other tokenizer.
    data.vocab_size = std::max(kGpt2VocabSize, max_token + 1);
  }
  return data;
}

TokenData parse_token_file(std::string_view bytes, const std::string& name) {
  check_header(bytes, name);  // before the copy: a bad file costs nothing
  return view_held_bytes(std::string(bytes), [&](std::string_view held) { return view_token_file(held, name, nullptr); });
}

TokenData view_held_bytes(std::string bytes, const std::function<TokenData(std::string_view)>& view) {
  auto held = std::make_shared<const std::string>(std::move(bytes));
  TokenData data = view(*held);
  data.private_bytes = held->size();
  data.storage = std::move(held);
  return data;
}

TokenData tokens_in_memory(std::vector<std::uint16_t> tokens, int vocab_size, std::string source, std::string format) {
  auto own = std::make_shared<const std::vector<std::uint16_t>>(std::move(tokens));
  TokenData data;
  data.tokens = TokenSpan(std::span<const std::uint16_t>(*own));
  data.vocab_size = vocab_size;
  data.source = std::move(source);
  data.format = std::move(format);
  data.private_bytes = own->size() * sizeof(std::uint16_t);
  data.storage = std::move(own);
  return data;
}

TokenData read_token_file(const std::string& path) { return parse_token_file(read_data_file(path), path); }

void write_token_file(const std::string& path, std::span<const std::uint16_t> tokens, int vocab_size) {
  if (tokens.empty()) throw Error(cat("[data] refusing to write ", path, ": there are no tokens to write"));
  if (tokens.size() > static_cast<std::size_t>(INT32_MAX)) {
    throw Error(cat("[data] cannot write ", path, ": ", tokens.size(),
                    " tokens are more than one llm.c token file holds (2^31 - 1); split them into shards"));
  }
  if (vocab_size < 0 || vocab_size > 65536) {
    throw Error(cat("[data] cannot write ", path, ": vocabulary size ", vocab_size,
                    " must be 0 (unspecified) or 1..65536 for uint16 tokens"));
  }
  const int max_token = *std::max_element(tokens.begin(), tokens.end());
  if (vocab_size > 0 && max_token >= vocab_size) {
    throw Error(cat("[data] cannot write ", path, ": token ", max_token, " is not below the vocabulary size ",
                    vocab_size));
  }
  std::array<std::int32_t, kHeaderInts> header{};
  header[0] = token_file::kMagic;
  header[1] = token_file::kVersion;
  header[2] = static_cast<std::int32_t>(tokens.size());
  header[3] = vocab_size;
  std::string bytes(kHeaderBytes + tokens.size_bytes(), '\0');
  std::memcpy(bytes.data(), header.data(), kHeaderBytes);
  std::memcpy(bytes.data() + kHeaderBytes, tokens.data(), tokens.size_bytes());
  write_output_file({"the token file", path}, bytes);
}

}  // namespace zero::data
