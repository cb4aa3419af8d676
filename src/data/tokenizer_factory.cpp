// open_tokenizer: the one place that turns a spec (a name, a file, a directory) into a tokenizer.
#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "data/gpt2_bpe.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/tokenizer.h"

namespace zero::data {
namespace {

namespace fs = std::filesystem;

struct FilePair {
  const char* vocab;
  const char* merges;
};
// Hugging Face's names first, then OpenAI's.
constexpr FilePair kGpt2Pairs[] = {{"vocab.json", "merges.txt"}, {"encoder.json", "vocab.bpe"}};

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::unique_ptr<Tokenizer> open_directory(const fs::path& dir) {
  if (is_file(dir / "tokenizer.model")) return std::make_unique<SentencePieceTokenizer>((dir / "tokenizer.model").string());
  for (const FilePair& pair : kGpt2Pairs) {
    if (is_file(dir / pair.vocab) && is_file(dir / pair.merges)) {
      return std::make_unique<Gpt2Bpe>((dir / pair.vocab).string(), (dir / pair.merges).string());
    }
  }
  throw Error(cat("[data] the directory ", dir.string(), " holds no tokenizer: looked for tokenizer.model "
                  "(SentencePiece), vocab.json + merges.txt and encoder.json + vocab.bpe (GPT-2's files, see "
                  "scripts/get-gpt2-tokenizer.sh); pass a directory with one of those, or a file"));
}

// The GPT-2 pair that `file` (one of the two) belongs to: its partner is looked for beside it.
std::unique_ptr<Tokenizer> open_gpt2_file(const fs::path& file) {
  const std::string name = file.filename().string();
  const fs::path dir = file.parent_path();
  for (const FilePair& pair : kGpt2Pairs) {
    const bool is_vocab = name == pair.vocab, is_merges = name == pair.merges;
    if (!is_vocab && !is_merges) continue;
    const fs::path partner = dir / (is_vocab ? pair.merges : pair.vocab);
    if (!is_file(partner)) {
      throw Error(cat("[data] ", file.string(), " needs its pair ", partner.string(), ", which is missing: GPT-2's ",
                      pair.vocab, " and ", pair.merges, " go together; put both in one directory"));
    }
    return is_vocab ? std::make_unique<Gpt2Bpe>(file.string(), partner.string())
                    : std::make_unique<Gpt2Bpe>(partner.string(), file.string());
  }
  // Another name: a .json is taken as a vocabulary with either merges file beside it.
  if (file.extension() == ".json") {
    for (const FilePair& pair : kGpt2Pairs) {
      if (is_file(dir / pair.merges)) return std::make_unique<Gpt2Bpe>(file.string(), (dir / pair.merges).string());
    }
  }
  throw Error(cat("[data] ", file.string(), " is not a tokenizer file zero knows by its name: pass a SentencePiece "
                  "*.model, GPT-2's vocab.json or encoder.json (with merges.txt or vocab.bpe beside it), the "
                  "directory holding them, or 'bytes'"));
}

}  // namespace

bool holds_tokenizer(const std::string& dir) {
  if (is_file(fs::path(dir) / "tokenizer.model")) return true;
  return std::any_of(std::begin(kGpt2Pairs), std::end(kGpt2Pairs),
                     [&](const FilePair& p) { return is_file(fs::path(dir) / p.vocab) && is_file(fs::path(dir) / p.merges); });
}

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& spec) {
  if (spec.empty() || spec == "bytes") return std::make_unique<ByteTokenizer>();
  const fs::path path(spec);
  std::error_code ec;
  if (fs::is_directory(path, ec)) return open_directory(path);
  if (!fs::exists(path, ec)) {
    throw Error(cat("[data] tokenizer ", spec, " does not exist: pass 'bytes', a GPT-2 vocab.json or encoder.json, or "
                    "a directory holding one (scripts/get-gpt2-tokenizer.sh fetches GPT-2's)"));
  }
  if (path.extension() == ".model") return std::make_unique<SentencePieceTokenizer>(path.string());
  return open_gpt2_file(path);
}

}  // namespace zero::data
