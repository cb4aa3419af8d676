// A SentencePiece model (tokenizer.model: LLaMA-2, TinyLlama, or one made with Debian's spm_train),
// run by Debian's libsentencepiece, not a rewrite. SentencePiece normalises text before it
// splits it (NFKC and whitespace folding by default), so decode(encode(x)) == x only for a model
// trained with --normalization_rule_name=identity --remove_extra_whitespaces=false and
// --byte_fallback=true (otherwise unseen characters become the unknown token).
#pragma once

#include <memory>

#include "data/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace zero::data {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // zero::Error ("[data] <path> ...") for a missing or unreadable file, or one that is not a
  // SentencePiece model.
  explicit SentencePieceTokenizer(std::string model_path);
  ~SentencePieceTokenizer() override;

  std::vector<TokenId> encode(std::string_view text) const override;
  std::string decode(std::span<const TokenId> ids) const override;
  std::size_t vocab_size() const override;
  std::optional<TokenId> end_of_text() const override;  // the model's </s>, if it has one
  std::string describe() const override;
  std::vector<std::string> files() const override { return {model_path_}; }
  HfTokenizer hugging_face() const override;

 private:
  std::string model_path_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace zero::data
