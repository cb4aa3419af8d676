// GPT-2's vocabulary and merges, read from the files OpenAI and Hugging Face ship: encoder.json
// + vocab.bpe (OpenAI) or vocab.json + merges.txt (Hugging Face): the same formats under two names.
//
// The JSON maps each token to its id; a token is written in GPT-2's byte-to-unicode alphabet, in
// which each of the 256 byte values is one printable character (the printable Latin-1 bytes stand
// for themselves, the others for U+0100 onwards: space is 'Ġ', U+0120), so any byte string can be
// a token and a token's bytes are its characters mapped back. The merges file lists the merges
// in rank order (best first), one a line, as the two tokens joined by one space, after an
// optional "#version" line.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/tokenizer.h"

namespace zero::data {

struct Gpt2Merge {
  std::uint32_t rank;  // line order in the merges file: lower merges first
  TokenId merged;      // the id of the two tokens joined
};

struct Gpt2Vocabulary {
  std::vector<std::string> tokens;                         // (vocab_size) the bytes of each id
  std::array<TokenId, 256> byte_ids{};                     // the id of each single byte
  std::unordered_map<std::uint64_t, Gpt2Merge> merges;     // key: pair_key(left, right)
  std::optional<TokenId> end_of_text;                      // the id of "<|endoftext|>", if present
};

inline std::uint64_t pair_key(TokenId left, TokenId right) { return (std::uint64_t{left} << 32) | right; }

// GPT-2's table: the code point standing for each byte value.
std::array<char32_t, 256> gpt2_byte_to_unicode();

// Reads and checks the pair of files. zero::Error ("[data] <file> ...", saying what to do) for a
// missing or unreadable file, JSON that does not parse (truncated) or is not an object of token
// -> id, ids that are not 0..N-1 once each, a token outside the byte alphabet, a vocabulary
// without one of the 256 byte tokens, or a merge line that is not two tokens of the vocabulary
// whose join is in the vocabulary too.
Gpt2Vocabulary read_gpt2_vocabulary(const std::string& vocab_path, const std::string& merges_path);

}  // namespace zero::data
