#include "data/prepare.h"

#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <system_error>

#include "common/error.h"
#include "common/input_file.h"
#include "common/number_text.h"
#include "common/task_queue.h"
#include "data/gpt2_bpe.h"
#include "data/token_file.h"
#include "data/tokenizer.h"

namespace zero::data {
namespace {

namespace fs = std::filesystem;

// A document (or a whole one held undivided) longer than this with no place to cut is an error,
// not unbounded memory.
constexpr std::size_t kMaxUncutBytes = std::size_t{1} << 30;
constexpr std::size_t kReadBytes = std::size_t{1} << 20;

enum class CutRule { anywhere, after_newline, documents_only };

CutRule cut_rule(const Tokenizer& t) {
  if (dynamic_cast<const ByteTokenizer*>(&t)) return CutRule::anywhere;
  if (dynamic_cast<const Gpt2Bpe*>(&t)) return CutRule::after_newline;
  return CutRule::documents_only;
}

// Where text[0, at) may be tokenized apart from text[at, ...) with the same tokens, at or before
// `want`, or 0 if nowhere. For GPT-2's regex: before a newline that follows a printable ASCII
// character. The piece holding that character ends there in the whole text too (no letter, digit
// or symbol run takes a newline), the newline starts a whitespace piece, and the regex has no
// look-behind, so the pieces after the cut are the same. (After a newline is not safe: a
// whitespace run's last character goes with the next piece only when one follows.)
std::size_t find_cut(std::string_view text, std::size_t want, CutRule rule) {
  if (rule == CutRule::documents_only || text.size() <= 1) return 0;
  want = std::min(want, text.size() - 1);
  if (rule == CutRule::anywhere) return want;
  for (std::size_t p = want; p >= 1; --p) {
    const unsigned char c = static_cast<unsigned char>(text[p - 1]);
    if (text[p] == '\n' && c > 0x20 && c < 0x7f) return p;
  }
  return 0;
}

struct Piece {
  std::size_t begin, end;
  bool starts_document;
};

struct Chunk {
  std::string text;
  std::vector<Piece> pieces;
  bool val = false;
  std::vector<std::uint16_t> tokens;  // filled by a worker
  std::shared_future<void> done;
};

// A file read in blocks through zlib (gzip decompressed, anything else as it is).
class TextStream {
 public:
  explicit TextStream(const std::string& path) : path_(path) {
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) throw Error(cat("[prepare] cannot open input file ", path, ": ", std::strerror(errno)));
    gzbuffer(file_, 1 << 18);
  }
  ~TextStream() { gzclose(file_); }
  TextStream(const TextStream&) = delete;
  TextStream& operator=(const TextStream&) = delete;

  // Appends up to kReadBytes to `out`; false at the end.
  bool read(std::string& out) {
    const std::size_t old = out.size();
    out.resize(old + kReadBytes);
    const int n = gzread(file_, out.data() + old, static_cast<unsigned>(kReadBytes));
    if (n < 0) {
      int code = 0;
      const char* why = gzerror(file_, &code);
      out.resize(old);
      throw Error(cat("[prepare] input file ", path_, " cannot be read: ", why,
                      " (a corrupt or truncated gzip file? check it with gzip -t)"));
    }
    out.resize(old + static_cast<std::size_t>(n));
    return n > 0;
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

class ShardWriter {
 public:
  ShardWriter(std::string dir, std::string split, std::uint64_t shard_tokens, int vocab, std::vector<std::string>& written)
      : dir_(std::move(dir)), split_(std::move(split)), shard_tokens_(shard_tokens), vocab_(vocab), written_(written) {}

  void append(std::span<const std::uint16_t> tokens) {
    total_ += tokens.size();
    while (!tokens.empty()) {
      const std::size_t take = std::min<std::size_t>(tokens.size(), shard_tokens_ - buffer_.size());
      buffer_.insert(buffer_.end(), tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(take));
      tokens = tokens.subspan(take);
      if (buffer_.size() == shard_tokens_) flush();
    }
  }
  void flush() {
    if (buffer_.empty()) return;
    const std::string path = shard_path(dir_, split_, shards_.size());
    written_.push_back(path);  // before writing: removed on failure either way
    write_token_file(path, buffer_, vocab_);
    shards_.push_back(path);
    buffer_.clear();
  }
  std::uint64_t total() const { return total_; }
  const std::vector<std::string>& shards() const { return shards_; }

 private:
  std::string dir_, split_;
  std::uint64_t shard_tokens_;
  int vocab_;
  std::vector<std::string>& written_;
  std::vector<std::uint16_t> buffer_;
  std::vector<std::string> shards_;
  std::uint64_t total_ = 0;
};

class Preparer {
 public:
  Preparer(const PrepareOptions& o, std::vector<std::unique_ptr<Tokenizer>> tokenizers, PrepareReport& report,
           std::vector<std::string>& written)
      : o_(o), tokenizers_(std::move(tokenizers)), report_(report),
        train_(o.out_dir, "train", o.shard_tokens, static_cast<int>(tokenizers_[0]->vocab_size()), written),
        val_(o.out_dir, "val", o.shard_tokens, static_cast<int>(tokenizers_[0]->vocab_size()), written),
        rule_(cut_rule(*tokenizers_[0])), start_(std::chrono::steady_clock::now()), last_progress_(start_),
        queues_(tokenizers_.size()) {}

  void run() {
    if (!o_.val_file.empty()) {
      in_val_file_ = true;
      add_file(o_.val_file);
      end_chunk();
      in_val_file_ = false;
    }
    for (const std::string& f : o_.inputs) add_file(f);
    end_chunk();
    while (!in_flight_.empty()) retire();
    train_.flush();
    val_.flush();
    report_.train_tokens = train_.total();
    report_.val_tokens = val_.total();
    report_.train_shards = train_.shards();
    report_.val_shards = val_.shards();
    report_.bytes_read = bytes_read_;
    report_.seconds = elapsed();
    if (train_.total() == 0) throw Error("[prepare] the inputs hold no tokens: every document is empty; give files with text");
    if (o_.val_fraction > 0 && val_.total() == 0) {
      throw Error(cat("[prepare] --val-fraction ", o_.val_fraction, " gave no validation chunk: the corpus is only ", chunks_,
                      " chunks of up to ", o_.chunk_bytes, " bytes; give a larger fraction or a --val-file"));
    }
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

  bool is_jsonl(const std::string& path) const {
    return !o_.jsonl_field.empty() || path.ends_with(".jsonl") || path.ends_with(".jsonl.gz");
  }

  void add_file(const std::string& path) {
    TextStream in(path);
    std::string buf;
    if (!is_jsonl(path)) {
      bool first = true;
      bool more = true;
      while (more) {
        const std::size_t before = buf.size();
        more = in.read(buf);
        count_read(buf.size() - before);
        // Cut off whole chunks while more than one chunk's text is held.
        std::size_t at = 0;
        while (buf.size() - at > o_.chunk_bytes) {
          const std::size_t cut = find_cut(std::string_view(buf).substr(at), o_.chunk_bytes, rule_);
          if (cut == 0) break;
          add_piece(std::string_view(buf).substr(at, cut), first);
          first = false;
          end_chunk();
          at += cut;
        }
        buf.erase(0, at);
        if (buf.size() > kMaxUncutBytes) {
          throw Error(cat("[prepare] input file ", path, " has more than ", kMaxUncutBytes >> 20,
                          " MiB that this tokenizer cannot cut (", rule_ == CutRule::documents_only
                              ? "it is tokenized by whole documents"
                              : "no line starts in it",
                          "); split the text into smaller documents (JSONL, one per line)"));
        }
      }
      add_piece(buf, first);
      if (rule_ == CutRule::documents_only) end_chunk();
      return;
    }
    const std::string field = o_.jsonl_field.empty() ? "text" : o_.jsonl_field;
    std::uint64_t line_no = 0;
    std::size_t at = 0;
    bool more = true;
    while (true) {
      const std::size_t nl = buf.find('\n', at);
      if (nl == std::string::npos) {
        buf.erase(0, at);
        at = 0;
        if (!more) break;
        const std::size_t before = buf.size();
        more = in.read(buf);
        count_read(buf.size() - before);
        if (buf.size() > kMaxUncutBytes) throw Error(cat("[prepare] ", path, " line ", line_no + 1, " is longer than ", kMaxUncutBytes >> 20, " MiB"));
        continue;
      }
      add_line(path, ++line_no, std::string_view(buf).substr(at, nl - at), field);
      at = nl + 1;
    }
    if (!buf.empty()) add_line(path, ++line_no, buf, field);
  }

  void add_line(const std::string& path, std::uint64_t line_no, std::string_view line, const std::string& field) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;  // blank lines hold no document
    std::string why;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      why = "not valid JSON";
    } else if (!j.is_object()) {
      why = cat("not a JSON object but ", j.type_name());
    } else if (!j.contains(field)) {
      why = cat("has no field \"", field, "\"");
    } else if (!j[field].is_string()) {
      why = cat("field \"", field, "\" is ", j[field].type_name(), ", not a string");
    }
    if (!why.empty()) {
      const std::string where = cat(path, " line ", line_no, ": ", why);
      if (!o_.skip_bad_lines) {
        throw Error(cat("[prepare] ", where, "; fix the line, or pass --skip-bad-lines to skip such lines (they are counted)"));
      }
      if (report_.bad_lines++ == 0) report_.first_bad_line = where;
      return;
    }
    add_piece(j[field].get_ref<const std::string&>(), true);
    if (current_.text.size() >= o_.chunk_bytes) end_chunk();
  }

  void count_read(std::size_t n) {
    bytes_read_ += n;
    const auto now = std::chrono::steady_clock::now();
    if (o_.progress && now - last_progress_ > std::chrono::milliseconds(500)) {
      last_progress_ = now;
      o_.progress({bytes_read_, written_tokens_, elapsed()});
    }
  }

  void add_piece(std::string_view text, bool starts_document) {
    if (starts_document) ++report_.documents;
    const std::size_t begin = current_.text.size();
    current_.text.append(text);
    current_.pieces.push_back({begin, current_.text.size(), starts_document});
  }

  // Sends the chunk being built to a worker.
  void end_chunk() {
    if (current_.pieces.empty()) return;
    auto chunk = std::make_shared<Chunk>(std::move(current_));
    current_ = Chunk{};
    chunk->val = in_val_file_;
    if (!in_val_file_) ++chunks_;
    const std::size_t w = next_queue_++ % queues_.size();
    const Tokenizer* tok = tokenizers_[w].get();
    // The task holds a plain pointer: the chunk (in in_flight_) outlives it, and a shared_ptr in the
    // task would be a cycle through the future's state, which keeps the task.
    Chunk* c = chunk.get();
    chunk->done = queues_[w].push([c, tok] {
      const std::optional<TokenId> eot = tok->end_of_text();
      for (const Piece& p : c->pieces) {
        if (p.starts_document && eot) c->tokens.push_back(static_cast<std::uint16_t>(*eot));
        for (TokenId id : tok->encode(std::string_view(c->text).substr(p.begin, p.end - p.begin))) {
          c->tokens.push_back(static_cast<std::uint16_t>(id));
        }
      }
      std::string().swap(c->text);
    });
    in_flight_.push_back(std::move(chunk));
    while (in_flight_.size() > 2 * queues_.size()) retire();
  }

  // Writes the oldest chunk's tokens, in order.
  void retire() {
    std::shared_ptr<Chunk> c = std::move(in_flight_.front());
    in_flight_.pop_front();
    c->done.get();
    if (!c->val && o_.val_fraction > 0) {
      // The corpus's chunk goes to val while val would hold less than the fraction of its tokens.
      const double n = static_cast<double>(c->tokens.size());
      corpus_tokens_ += c->tokens.size();
      c->val = static_cast<double>(val_.total()) + n / 2 <= o_.val_fraction * static_cast<double>(corpus_tokens_);
    }
    (c->val ? val_ : train_).append(c->tokens);
    written_tokens_ += c->tokens.size();
  }

  const PrepareOptions& o_;
  std::vector<std::unique_ptr<Tokenizer>> tokenizers_;
  PrepareReport& report_;
  ShardWriter train_, val_;
  CutRule rule_;
  Chunk current_;
  std::deque<std::shared_ptr<Chunk>> in_flight_;
  std::size_t next_queue_ = 0;
  std::uint64_t chunks_ = 0;
  std::uint64_t corpus_tokens_ = 0;  // of the inputs' chunks retired (not --val-file's)
  bool in_val_file_ = false;
  std::uint64_t bytes_read_ = 0, written_tokens_ = 0;
  std::chrono::steady_clock::time_point start_, last_progress_;
  // Last: destroyed first, so its threads finish before the chunks and tokenizers they use go.
  std::vector<TaskQueue> queues_;
};

void check_out_dir(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_directory(st)) {
    throw Error(cat("[prepare] --out ", dir, " exists and is not a folder; give a new or empty folder for the shards"));
  }
  std::size_t n = 0;
  std::string example;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (n++ == 0) example = e.path().filename().string();
  }
  if (ec) throw Error(cat("[prepare] --out ", dir, " cannot be listed: ", ec.message()));
  if (n > 0) {
    throw Error(cat("[prepare] --out ", dir, " is not empty (", n, " entries, e.g. ", example,
                    "); prepare writes only into a new or empty folder: give another --out or empty this one"));
  }
}

}  // namespace

std::string shard_path(const std::string& dir, const std::string& split, std::size_t index) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%06zu", index);
  return cat(dir, "/", split, "_", digits, ".bin");
}

PrepareReport prepare_shards(const PrepareOptions& o) {
  if (o.inputs.empty()) throw ConfigError("[prepare] no input files: zero data prepare FILE... --out DIR");
  if (o.out_dir.empty()) throw ConfigError("[prepare] needs --out DIR, the folder for the shards");
  if (o.shard_tokens < 1 || o.shard_tokens > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
    throw ConfigError(cat("[prepare] --shard-tokens must be between 1 and ", std::numeric_limits<std::int32_t>::max(),
                          " (llm.c's header counts tokens in 32 bits), not ", o.shard_tokens));
  }
  if (o.chunk_bytes < 1 || o.chunk_bytes > kMaxUncutBytes) {
    throw ConfigError(cat("[prepare] --chunk-bytes must be between 1 and ", kMaxUncutBytes, ", not ", o.chunk_bytes));
  }
  if (o.threads < 1) throw ConfigError(cat("[prepare] --threads must be at least 1, not ", o.threads));
  if (!(o.val_fraction >= 0 && o.val_fraction < 1)) {
    throw ConfigError(cat("[prepare] --val-fraction must be at least 0 and below 1, not ", o.val_fraction));
  }
  if (o.val_fraction > 0 && !o.val_file.empty()) {
    throw ConfigError("[prepare] --val-fraction and --val-file both name a validation set: give one");
  }
  std::vector<std::string> all = o.inputs;
  if (!o.val_file.empty()) all.push_back(o.val_file);
  for (const std::string& f : all) {
    check_input_file({f, "prepare", "input file", std::numeric_limits<std::uint64_t>::max()});
  }
  check_out_dir(o.out_dir);
  std::vector<std::unique_ptr<Tokenizer>> tokenizers;
  tokenizers.push_back(open_tokenizer(o.tokenizer));
  if (tokenizers[0]->vocab_size() > 65536) {
    throw Error(cat("[prepare] the tokenizer ", tokenizers[0]->describe(), " has more than 65536 tokens; llm.c's .bin shards hold 16-bit tokens"));
  }
  // One tokenizer per thread: no thread waits on another's word cache.
  for (int t = 1; t < o.threads; ++t) tokenizers.push_back(open_tokenizer(o.tokenizer));

  std::error_code ec;
  const bool created = !fs::exists(o.out_dir, ec);
  if (created && !fs::create_directories(o.out_dir, ec) && ec) {
    throw Error(cat("[prepare] cannot create the output folder ", o.out_dir, ": ", ec.message()));
  }
  PrepareReport report;
  report.tokenizer = tokenizers[0]->describe();
  std::vector<std::string> written;
  try {
    Preparer(o, std::move(tokenizers), report, written).run();
  } catch (...) {
    for (const std::string& f : written) fs::remove(f, ec);
    if (created) fs::remove(o.out_dir, ec);
    throw;
  }
  return report;
}

}  // namespace zero::data
