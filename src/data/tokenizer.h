// Tokenizers: text (bytes) to token ids and back.
//
// Tokenizer is the one interface; an implementation is chosen by open_tokenizer() from a spec
// (data/tokenizer_factory.cpp): "bytes" (the default), GPT-2's byte-level BPE (data/gpt2_bpe.h)
// or a SentencePiece model. decode() returns bytes, not necessarily valid UTF-8 (a model's
// sample may stop mid-character), so what is shown to a person goes through printable_text().
//
// The byte-level tokenizer: a token is one byte of the UTF-8 text, so the vocabulary is the 256
// byte values and any text encodes without an unknown token. A character-level model sees a
// multi-byte character as several tokens; the model learns to emit them together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zero::data {

using TokenId = std::uint32_t;

// A tokenizer as a Hugging Face model directory holds it (zero ckpt export writes one): the slow
// tokenizer class of transformers' that reads the same files, the name that class reads each of
// files() under, and the special tokens it names in tokenizer_config.json.
struct HfTokenizer {
  struct Special {
    TokenId id;
    std::string text;  // "<|endoftext|>", "</s>"
  };
  std::string tokenizer_class;     // "GPT2Tokenizer", "LlamaTokenizer"; empty: transformers has none (bytes)
  std::vector<std::string> names;  // (files().size()) e.g. "vocab.json", "merges.txt"
  std::optional<Special> bos, eos, unk;
  std::string options_json = "{}";  // the class's own tokenizer_config.json fields, a JSON object
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // The ids of `text`, any bytes (invalid UTF-8 included, for the byte-level tokenizers).
  virtual std::vector<TokenId> encode(std::string_view text) const = 0;
  // The bytes of `ids`; an id outside the vocabulary throws zero::Error naming it and its position.
  virtual std::string decode(std::span<const TokenId> ids) const = 0;
  virtual std::size_t vocab_size() const = 0;
  // The id put between documents (GPT-2's <|endoftext|>), if the vocabulary has one.
  virtual std::optional<TokenId> end_of_text() const = 0;
  // For messages and checkpoints: "GPT-2 BPE (50257 tokens) from <files>", "bytes (256 tokens)".
  virtual std::string describe() const = 0;
  // The files it was read from (none for the byte tokenizer), to record in checkpoints.
  virtual std::vector<std::string> files() const = 0;
  virtual HfTokenizer hugging_face() const = 0;
};

// The tokenizer a spec names: "bytes" or "" (the byte tokenizer); a SentencePiece *.model; a GPT-2 vocabulary
// (vocab.json with merges.txt beside it, or encoder.json with vocab.bpe), a merges file (its
// vocabulary found beside it), or a directory holding tokenizer.model or one of those pairs (a
// Hugging Face model directory). Throws zero::Error ("[data] ...") naming the file and what to do.
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& spec);

// The ids of the documents in order, end_of_text() between each two (zero::Error if the
// tokenizer has none and there is more than one document).
std::vector<TokenId> encode_documents(const Tokenizer& tokenizer, std::span<const std::string_view> documents);

class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr int kVocabSize = 256;

  // One token per byte, in order (the data path's 16-bit tokens).
  static std::vector<std::uint16_t> encode_bytes(std::string_view text);
  // The bytes back; a token >= 256 is not a byte and throws zero::Error.
  static std::string decode_bytes(std::span<const std::uint16_t> tokens);

  std::vector<TokenId> encode(std::string_view text) const override;
  std::string decode(std::span<const TokenId> ids) const override;
  std::size_t vocab_size() const override { return kVocabSize; }
  std::optional<TokenId> end_of_text() const override { return std::nullopt; }
  std::string describe() const override { return "bytes (256 tokens)"; }
  std::vector<std::string> files() const override { return {}; }
  HfTokenizer hugging_face() const override { return {}; }
};

// Length of the well-formed UTF-8 sequence at bytes[at] (1-4), or 0 when the bytes there do not
// begin one (see utf8_error_offset for what counts as invalid).
std::size_t utf8_sequence_length(std::string_view bytes, std::size_t at);

// Offset of the first byte that breaks UTF-8 (a bad lead byte, a missing continuation, an
// overlong form, a surrogate, a code point past U+10FFFF), or std::string_view::npos if the
// whole text is valid. A sequence cut off by the end of `bytes` counts as invalid.
std::size_t utf8_error_offset(std::string_view bytes);

// `bytes` made safe to print: every invalid UTF-8 byte and every control character except
// newline and tab becomes U+FFFD, so a sample cannot break the terminal or a JSON consumer.
std::string printable_text(std::string_view bytes);

// A guess, for naming a mistake in messages (a token file passed as text, text named .bin):
// true when the first 4 KiB hold no NUL byte and are valid UTF-8 up to a sequence cut off by
// the window's end.
bool looks_like_text(std::string_view bytes);

}  // namespace zero::data
