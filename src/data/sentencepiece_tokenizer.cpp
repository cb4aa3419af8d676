#include "data/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include "common/error.h"
#include "common/input_file.h"

namespace zero::data {

SentencePieceTokenizer::SentencePieceTokenizer(std::string model_path)
    : model_path_(std::move(model_path)), processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const std::string bytes = read_input_file({model_path_, "data", "tokenizer file", std::uint64_t{1} << 30});
  const auto status = processor_->LoadFromSerializedProto(bytes);
  if (!status.ok()) {
    throw Error(cat("[data] ", model_path_, " is not a SentencePiece model (libsentencepiece: ", status.ToString(),
                    "): pass a tokenizer.model file, e.g. one made by spm_train, or GPT-2's vocab.json"));
  }
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::vector<TokenId> SentencePieceTokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = processor_->Encode(text, &ids);
  if (!status.ok()) throw Error(cat("[data] SentencePiece cannot encode the text with ", model_path_, ": ", status.ToString()));
  return std::vector<TokenId>(ids.begin(), ids.end());
}

std::string SentencePieceTokenizer::decode(std::span<const TokenId> ids) const {
  std::vector<int> in(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= vocab_size()) {
      throw Error(cat("[data] token ", ids[i], " at position ", i, " is not in the vocabulary of ", describe(), " (ids 0..",
                      vocab_size() - 1, "): decode with the tokenizer the tokens were made with"));
    }
    in[i] = static_cast<int>(ids[i]);
  }
  std::string text;
  const auto status = processor_->Decode(in, &text);
  if (!status.ok()) throw Error(cat("[data] SentencePiece cannot decode with ", model_path_, ": ", status.ToString()));
  return text;
}

std::size_t SentencePieceTokenizer::vocab_size() const { return static_cast<std::size_t>(processor_->GetPieceSize()); }

std::optional<TokenId> SentencePieceTokenizer::end_of_text() const {
  const int eos = processor_->eos_id();
  return eos >= 0 ? std::optional<TokenId>(static_cast<TokenId>(eos)) : std::nullopt;
}

// zero encodes text as libsentencepiece does, adding no <s> or </s>: LlamaTokenizer is told to add
// none either (its default adds <s>), and `legacy` keeps its tokenize() libsentencepiece's own, so
// that it gives the ids the model was trained on.
HfTokenizer SentencePieceTokenizer::hugging_face() const {
  HfTokenizer hf;
  hf.tokenizer_class = "LlamaTokenizer";
  hf.names = {"tokenizer.model"};
  const auto special = [&](int id) {
    return id < 0 ? std::nullopt : std::optional(HfTokenizer::Special{static_cast<TokenId>(id), processor_->IdToPiece(id)});
  };
  hf.bos = special(processor_->bos_id());
  hf.eos = special(processor_->eos_id());
  hf.unk = special(processor_->unk_id());
  hf.options_json = R"({"add_bos_token": false, "add_eos_token": false, "legacy": true, "sp_model_kwargs": {}})";
  return hf;
}

std::string SentencePieceTokenizer::describe() const {
  return cat("SentencePiece (", vocab_size(), " tokens) from ", model_path_);
}

}  // namespace zero::data
