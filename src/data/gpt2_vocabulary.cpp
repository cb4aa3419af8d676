#include "data/gpt2_vocabulary.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/input_file.h"

namespace zero::data {
namespace {

constexpr std::uint64_t kMaxTokenizerFileBytes = std::uint64_t{1} << 30;
constexpr std::string_view kEndOfText = "<|endoftext|>";

std::string read_tokenizer_file(const std::string& path) {
  return read_input_file({path, "data", "tokenizer file", kMaxTokenizerFileBytes});
}

// The inverse of gpt2_byte_to_unicode, over the code points below 0x200 it uses.
class ByteAlphabet {
 public:
  ByteAlphabet() {
    byte_of_.fill(-1);
    const std::array<char32_t, 256> table = gpt2_byte_to_unicode();
    for (int b = 0; b < 256; ++b) byte_of_[table[b]] = b;
  }
  // The bytes `token` (GPT-2's alphabet, UTF-8) stands for; nullopt if a character is outside it.
  std::optional<std::string> bytes_of(std::string_view token) const {
    std::string bytes;
    std::size_t at = 0;
    while (at < token.size()) {
      const std::size_t n = utf8_sequence_length(token, at);
      if (n == 0 || n > 2) return std::nullopt;  // the alphabet is below U+0200: 1 or 2 bytes
      char32_t cp = static_cast<unsigned char>(token[at]);
      if (n == 2) cp = ((cp & 0x1F) << 6) | (static_cast<unsigned char>(token[at + 1]) & 0x3F);
      if (cp >= byte_of_.size() || byte_of_[cp] < 0) return std::nullopt;
      bytes += static_cast<char>(byte_of_[cp]);
      at += n;
    }
    return bytes;
  }

 private:
  std::array<int, 0x200> byte_of_;
};

nlohmann::json parse_vocab_json(const std::string& path) {
  const std::string text = read_tokenizer_file(path);
  try {
    nlohmann::json json = nlohmann::json::parse(text);
    if (!json.is_object()) {
      throw Error(cat("[data] ", path, " is JSON but not a GPT-2 vocabulary (a JSON object of token -> id, as in "
                      "encoder.json or vocab.json): pass GPT-2's vocab.json or encoder.json"));
    }
    return json;
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann counts from 1 and reports one past the end when the input stops mid-value.
    if (e.byte >= text.size()) {
      throw Error(cat("[data] ", path, " is truncated JSON (it ends after ", text.size(), " bytes, inside a value): "
                      "pass a whole GPT-2 vocab.json or encoder.json, e.g. fetch it again with "
                      "scripts/get-gpt2-tokenizer.sh"));
    }
    throw Error(cat("[data] ", path, " is not a JSON file (", e.what(), "), so not a GPT-2 vocabulary: pass GPT-2's "
                    "vocab.json or encoder.json (a SentencePiece model is a tokenizer.model file)"));
  }
}

void read_tokens(const std::string& path, const ByteAlphabet& alphabet, Gpt2Vocabulary& vocab,
                 std::unordered_map<std::string, TokenId>& id_of) {
  const nlohmann::json json = parse_vocab_json(path);
  vocab.tokens.assign(json.size(), std::string());
  std::vector<bool> seen(json.size(), false);
  for (const auto& [token, value] : json.items()) {
    if (!value.is_number_unsigned() || value.get<std::uint64_t>() >= json.size()) {
      throw Error(cat("[data] ", path, ": token '", token, "' has id ", value.dump(), ", not one of 0..", json.size() - 1,
                      " (a vocabulary of N tokens numbers them 0..N-1): pass GPT-2's own vocab.json or encoder.json"));
    }
    const auto id = value.get<TokenId>();
    if (seen[id]) throw Error(cat("[data] ", path, ": id ", id, " is given to two tokens; the file is not a GPT-2 vocabulary"));
    seen[id] = true;
    const std::optional<std::string> bytes = alphabet.bytes_of(token);
    if (!bytes) {
      throw Error(cat("[data] ", path, ": token '", token, "' (id ", id, ") has a character outside GPT-2's "
                      "byte-to-unicode alphabet, so it is not a byte-level BPE vocabulary: pass GPT-2's vocab.json "
                      "or encoder.json (a SentencePiece model is a tokenizer.model file)"));
    }
    vocab.tokens[id] = *bytes;
    if (token == kEndOfText) vocab.end_of_text = id;
    id_of.emplace(*bytes, id);
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = id_of.find(std::string(1, static_cast<char>(b)));
    if (it == id_of.end()) {
      throw Error(cat("[data] ", path, " has no token for the byte ", b, ": a byte-level BPE vocabulary has all 256, "
                      "so this is not one; pass GPT-2's vocab.json or encoder.json"));
    }
    vocab.byte_ids[b] = it->second;
  }
}

// The id of one side of a merge, or zero::Error naming the line.
TokenId merge_side(std::string_view token, const ByteAlphabet& alphabet, const std::unordered_map<std::string, TokenId>& id_of,
                   const std::string& merges_path, const std::string& vocab_path, std::size_t line) {
  const std::optional<std::string> bytes = alphabet.bytes_of(token);
  const auto it = bytes ? id_of.find(*bytes) : id_of.end();
  if (it == id_of.end()) {
    throw Error(cat("[data] ", merges_path, " line ", line, " names the token '", token, "', which is not in ", vocab_path,
                    ": the two files are not a pair; pass the merges file that came with the vocabulary"));
  }
  return it->second;
}

void read_merges(const std::string& path, const std::string& vocab_path, const ByteAlphabet& alphabet,
                 const std::unordered_map<std::string, TokenId>& id_of, Gpt2Vocabulary& vocab) {
  const std::string text = read_tokenizer_file(path);
  std::size_t at = 0, line = 0;
  std::uint32_t rank = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view entry(text.data() + at, end - at);
    at = end + 1, ++line;
    if (!entry.empty() && entry.back() == '\r') entry.remove_suffix(1);
    if (entry.empty() || (line == 1 && entry.starts_with("#version"))) continue;
    const std::size_t space = entry.find(' ');
    if (space == 0 || space == std::string_view::npos || entry.find(' ', space + 1) != std::string_view::npos) {
      throw Error(cat("[data] ", path, " line ", line, " is not a merge (two tokens separated by one space): is it "
                      "GPT-2's merges.txt or vocab.bpe? Pass the merges file that came with ", vocab_path));
    }
    const TokenId left = merge_side(entry.substr(0, space), alphabet, id_of, path, vocab_path, line);
    const TokenId right = merge_side(entry.substr(space + 1), alphabet, id_of, path, vocab_path, line);
    const auto joined = id_of.find(vocab.tokens[left] + vocab.tokens[right]);
    if (joined == id_of.end()) {
      throw Error(cat("[data] ", path, " line ", line, " merges into '", entry.substr(0, space), entry.substr(space + 1),
                      "', which is not in ", vocab_path, ": the two files are not a pair"));
    }
    vocab.merges.emplace(pair_key(left, right), Gpt2Merge{rank++, joined->second});  // a repeat keeps its first rank
  }
  if (vocab.merges.empty()) {
    throw Error(cat("[data] ", path, " has no merges: pass GPT-2's merges.txt or vocab.bpe (one merge a line)"));
  }
}

}  // namespace

std::array<char32_t, 256> gpt2_byte_to_unicode() {
  std::array<char32_t, 256> table{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    table[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return table;
}

Gpt2Vocabulary read_gpt2_vocabulary(const std::string& vocab_path, const std::string& merges_path) {
  const ByteAlphabet alphabet;
  Gpt2Vocabulary vocab;
  std::unordered_map<std::string, TokenId> id_of;  // token bytes -> id
  read_tokens(vocab_path, alphabet, vocab, id_of);
  read_merges(merges_path, vocab_path, alphabet, id_of, vocab);
  return vocab;
}

}  // namespace zero::data
