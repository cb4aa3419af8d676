#include "data/gpt2_bpe.h"

#include <limits>

#include "common/error.h"

namespace zero::data {

Gpt2Bpe::Gpt2Bpe(std::string vocab_path, std::string merges_path)
    : vocab_path_(std::move(vocab_path)),
      merges_path_(std::move(merges_path)),
      vocab_(read_gpt2_vocabulary(vocab_path_, merges_path_)) {}

std::string Gpt2Bpe::describe() const {
  return cat("GPT-2 BPE (", vocab_size(), " tokens) from ", vocab_path_, " + ", merges_path_);
}

// OpenAI's encoder.json is the JSON object transformers' GPT2Tokenizer reads as vocab.json, and
// vocab.bpe (a "#version" line, then a merge a line) its merges.txt: the files are copied as they are.
HfTokenizer Gpt2Bpe::hugging_face() const {
  HfTokenizer hf;
  hf.tokenizer_class = "GPT2Tokenizer";
  hf.names = {"vocab.json", "merges.txt"};
  if (vocab_.end_of_text) hf.bos = hf.eos = hf.unk = HfTokenizer::Special{*vocab_.end_of_text, "<|endoftext|>"};
  hf.options_json = R"({"add_prefix_space": false, "add_bos_token": false})";  // as zero encodes: no space or token put first
  return hf;
}

std::vector<TokenId> Gpt2Bpe::merge_word(std::string_view word) const {
  std::vector<TokenId> parts(word.size());  // (word bytes) the word's tokens, merged in place
  for (std::size_t i = 0; i < word.size(); ++i) parts[i] = vocab_.byte_ids[static_cast<unsigned char>(word[i])];
  while (parts.size() > 1) {
    // The best-ranked pair of the word ...
    std::uint32_t best = std::numeric_limits<std::uint32_t>::max();
    TokenId left = 0, right = 0, merged = 0;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      const auto it = vocab_.merges.find(pair_key(parts[i], parts[i + 1]));
      if (it != vocab_.merges.end() && it->second.rank < best) {
        best = it->second.rank, left = parts[i], right = parts[i + 1], merged = it->second.merged;
      }
    }
    if (best == std::numeric_limits<std::uint32_t>::max()) break;
    // ... merged at each of its places, left to right, without overlap ("aaa" -> "aa" "a").
    std::size_t out = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (i + 1 < parts.size() && parts[i] == left && parts[i + 1] == right) {
        parts[out++] = merged, ++i;
      } else {
        parts[out++] = parts[i];
      }
    }
    parts.resize(out);
  }
  return parts;
}

void Gpt2Bpe::append_word(std::string_view word, std::vector<TokenId>& out) const {
  {
    const std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<TokenId> parts = merge_word(word);
  out.insert(out.end(), parts.begin(), parts.end());
  const std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() >= kMaxCachedWords) cache_.clear();  // bounded memory on a corpus of endless new words
  cache_.emplace(std::string(word), std::move(parts));
}

std::vector<TokenId> Gpt2Bpe::encode(std::string_view text) const {
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3);  // English prose runs about 4 bytes a token
  pretokenizer_.split(text, [&](std::string_view word) { append_word(word, ids); });
  return ids;
}

std::string Gpt2Bpe::decode(std::span<const TokenId> ids) const {
  std::string text;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= vocab_.tokens.size()) {
      throw Error(cat("[data] token ", ids[i], " at position ", i, " is not in the vocabulary of ", describe(),
                      " (ids 0..", vocab_.tokens.size() - 1, "): decode with the tokenizer the tokens were made with"));
    }
    text += vocab_.tokens[ids[i]];
  }
  return text;
}

}  // namespace zero::data
