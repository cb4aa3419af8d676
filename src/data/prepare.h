// `zero data prepare`: text files tokenized into llm.c-format .bin shards (data/token_file.h).
//
// Documents: a plain text file (gzip allowed, found by its bytes) is one document; a JSONL file
// holds one document per line, the string in a named field. As llm.c's dev/data scripts do, the
// tokenizer's end-of-text id goes *before* every document (GPT-2's <|endoftext|>), so the
// shards concatenated equal, for each document in order, [end-of-text] + encode(document). A
// tokenizer without one (bytes) puts nothing between documents.
//
// Streaming: the inputs are read in chunks of about `chunk_bytes` (default kChunkBytes), cut only where the tokenizer
// gives the same tokens cut as whole (bytes: anywhere; GPT-2 BPE: before a newline that follows a
// printable ASCII character, a piece boundary of its regex; others, SentencePiece: only between
// documents, so such a document is held whole). Chunks are tokenized on `threads` threads, a few
// in flight, and their tokens appended in order to shards of `shard_tokens`; memory is a few
// chunks plus one shard per split, whatever the corpus size.
//
// Validation: with `val_file`, its documents make the val shards; with `val_fraction` f, the
// corpus's chunks, taken in order, go to val whenever val holds less than f of their tokens so
// far (counting half the chunk's), else to train: about f of the tokens, spread evenly through
// the corpus, the same for any thread count (a document may be cut between the two).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace zero::data {

inline constexpr std::size_t kChunkBytes = std::size_t{256} << 10;

struct PrepareProgress {
  std::uint64_t bytes_read = 0;     // text bytes (decompressed)
  std::uint64_t tokens_written = 0;  // train and val
  double seconds = 0;
};

struct PrepareOptions {
  std::vector<std::string> inputs;
  std::string out_dir;
  std::string tokenizer;  // a spec for open_tokenizer; "" is bytes
  std::uint64_t shard_tokens = 100'000'000;
  int threads = 1;
  std::size_t chunk_bytes = kChunkBytes;  // text per tokenizer task (and the val fraction's unit)
  std::string jsonl_field;  // set: every input is JSONL; empty: *.jsonl(.gz) are, with field "text"
  bool skip_bad_lines = false;
  double val_fraction = 0;
  std::string val_file;
  std::function<void(const PrepareProgress&)> progress;  // called about twice a second
};

struct PrepareReport {
  std::uint64_t train_tokens = 0, val_tokens = 0;
  std::vector<std::string> train_shards, val_shards;
  std::uint64_t documents = 0;
  std::uint64_t bad_lines = 0;  // skipped (--skip-bad-lines)
  std::string first_bad_line;   // "file line N: why"
  std::uint64_t bytes_read = 0;
  double seconds = 0;
  std::string tokenizer;  // describe()
};

// Checks everything before work (inputs readable, output folder new or empty, tokenizer opens and
// fits 16-bit tokens, sizes in range): zero::Error / ConfigError ("[prepare] ..."). A failure
// during the work (a bad JSONL line, corrupt gzip) removes the shards written, so the folder is
// left as it was found.
PrepareReport prepare_shards(const PrepareOptions& options);

// Name of shard `index` of `split` ("train", "val") in `dir`: dir/train_000000.bin.
std::string shard_path(const std::string& dir, const std::string& split, std::size_t index);

}  // namespace zero::data
