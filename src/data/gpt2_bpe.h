// GPT-2's byte-level BPE (Radford et al. 2019): the text is cut into words by GPT-2's regex
// (data/pretokenizer.h), each word starts as its bytes' tokens, and the adjacent pair with the
// best (lowest) merge rank is merged everywhere in the word, left to right, until no pair of the
// word has a merge. Every byte has a token, so any bytes encode; decode concatenates the tokens'
// bytes. Text that spells "<|endoftext|>" is encoded as ordinary text (as OpenAI's encoder and
// gpt-3-encoder do); the end-of-text id goes only between documents (encode_documents).
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/gpt2_vocabulary.h"
#include "data/pretokenizer.h"
#include "data/tokenizer.h"

namespace zero::data {

class Gpt2Bpe final : public Tokenizer {
 public:
  // Reads the pair (see read_gpt2_vocabulary for the errors).
  Gpt2Bpe(std::string vocab_path, std::string merges_path);

  std::vector<TokenId> encode(std::string_view text) const override;
  std::string decode(std::span<const TokenId> ids) const override;
  std::size_t vocab_size() const override { return vocab_.tokens.size(); }
  std::optional<TokenId> end_of_text() const override { return vocab_.end_of_text; }
  std::string describe() const override;
  std::vector<std::string> files() const override { return {vocab_path_, merges_path_}; }
  HfTokenizer hugging_face() const override;

  // The BPE of one word (its bytes), without the regex: the merge rule alone, for tests.
  std::vector<TokenId> merge_word(std::string_view word) const;

 private:
  void append_word(std::string_view word, std::vector<TokenId>& out) const;

  struct StringHash {  // lets the cache be searched with a string_view, without a copy
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // A word's tokens once merged: text repeats its words, so most words are merged once.
  using WordCache = std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>>;
  static constexpr std::size_t kMaxCachedWords = std::size_t{1} << 20;  // then the cache starts over

  std::string vocab_path_, merges_path_;
  Gpt2Vocabulary vocab_;
  Pretokenizer pretokenizer_;
  mutable std::mutex cache_mutex_;  // encode() is const and may run on several threads
  mutable WordCache cache_;
};

}  // namespace zero::data
