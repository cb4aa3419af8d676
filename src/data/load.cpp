#include "data/load.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <new>

#include "common/error.h"
#include "common/input_file.h"
#include "common/mapped_file.h"
#include "data/file_io.h"
#include "data/gzip.h"
#include "data/tokenizer.h"

namespace zero::data {
namespace {

// A file's name without a ".gz": what its format is judged by.
std::string_view without_gz(std::string_view path) {
  if (path.ends_with(".gz")) path.remove_suffix(3);
  return path;
}

// "text" or "bin" for a file named `name` (".gz" already removed), given the requested format.
std::string resolve_format(std::string_view name, const std::string& format) {
  if (format == "text" || format == "bin") return format;
  if (format == "auto") return name.ends_with(".bin") ? "bin" : "text";
  throw ConfigError(cat("[data] unknown data format '", format, "': use auto, text or bin"));
}

std::string hex_byte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02X", c);
  return buf;
}

[[noreturn]] void throw_empty(const std::string& name) {
  throw Error(cat("[data] ", name, " is empty: pass a file with text or tokens in it"));
}

}  // namespace

void check_text(std::string_view text, const std::string& name) {
  if (text.empty()) throw_empty(name);
  if (has_token_file_magic(text)) {
    throw Error(cat("[data] ", name, " is an llm.c token file (it starts with the magic ", token_file::kMagic,
                    "), not text: name it *.bin or load it with format 'bin'"));
  }
  const std::size_t bad = utf8_error_offset(text);
  if (bad != std::string_view::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    // A UTF-16 byte-order mark says which conversion the file needs; otherwise Latin-1 is the usual one.
    const bool utf16 = text.size() >= 2 && ((text[0] == '\xFF' && text[1] == '\xFE') || (text[0] == '\xFE' && text[1] == '\xFF'));
    throw Error(cat("[data] ", name, " is not valid UTF-8 text: byte ", hex_byte(static_cast<unsigned char>(text[bad])),
                    " at offset ", bad, " (line ", line, ") does not begin a valid UTF-8 character",
                    utf16 ? "; it starts with a UTF-16 byte-order mark: convert it with iconv -f utf-16 -t utf-8"
                          : "; convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)",
                    ", or pass an llm.c .bin token file"));
  }
}

// Byte tokens are the bytes themselves: the text is its own token array, one byte per token.
TokenData view_text(std::string_view text, const std::string& name, const MappedFile* file) {
  check_text(text, name);
  TokenData data;
  data.tokens = TokenSpan(reinterpret_cast<const unsigned char*>(text.data()), text.size(), 1, file);
  data.vocab_size = ByteTokenizer::kVocabSize;
  data.source = name;
  data.format = "text";
  return data;
}

// The tokens of `bytes` (a file's whole content, decompressed), held in `storage`.
TokenData view_bytes(std::string_view bytes, const std::string& kind, const std::string& name, const MappedFile* file) {
  return kind == "bin" ? view_token_file(bytes, name, file) : view_text(bytes, name, file);
}

// A file read into this process's memory: a gzip file (decompressed), or one whose size the
// file system does not give (/proc files say 0 bytes), which cannot be mapped.
TokenData load_into_memory(const std::string& path, const std::string& kind) {
  std::string bytes = read_data_file(path);
  if (bytes.empty()) throw_empty(path);
  if (is_gzip(bytes)) {
    try {
      bytes = gunzip(bytes, path, kMaxDataFileBytes);
    } catch (const std::bad_alloc&) {
      throw Error(cat("[data] ", path, " does not fit in memory once decompressed (each rank decompresses its own "
                      "copy): decompress it (gunzip) and pass the file itself, which the ranks of a host share"));
    }
    if (bytes.empty()) throw Error(cat("[data] ", path, " is empty once decompressed: pass a file with text or tokens in it"));
  }
  return view_held_bytes(std::move(bytes), [&](std::string_view held) { return view_bytes(held, kind, path, nullptr); });
}

// A file mapped read-only and shared: the ranks of a host read one copy (common/mapped_file.h).
TokenData load_mapped(const std::string& path, const std::string& kind) {
  auto file = std::make_shared<const MappedFile>(InputFile{path, "data", "data file", kMaxDataFileBytes});
  const std::string_view bytes(reinterpret_cast<const char*>(file->data()), file->size());
  bool gzip = false;
  file->read([&] { gzip = is_gzip(bytes); });
  if (gzip) return load_into_memory(path, kind);
  TokenData data;
  file->read([&] { data = view_bytes(bytes, kind, path, file.get()); });  // every check reads the mapping
  file->advise_random();  // the checks read it all; batches read it at random
  data.mapped_bytes = file->size();
  data.storage = std::move(file);
  return data;
}

TokenData tokenize_text(std::string_view text, const std::string& name) {
  check_text(text, name);  // before the copy: a bad text costs nothing
  return view_held_bytes(std::string(text), [&](std::string_view held) { return view_text(held, name, nullptr); });
}

namespace {

TokenData load_one_file(const std::string& path, const std::string& format) {
  const std::string kind = resolve_format(without_gz(path), format);  // before reading: a bad format fails fast
  const InputFd fd = open_input_file({path, "data", "data file", kMaxDataFileBytes});
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && st.st_size > 0) return load_mapped(path, kind);
  return load_into_memory(path, kind);
}

TokenData tokenize_one_file(const std::string& path, const Tokenizer& tokenizer) {
  constexpr std::size_t kMaxVocab = std::size_t{1} << 16;  // TokenSpan holds 16-bit tokens, as llm.c's .bin
  if (tokenizer.vocab_size() > kMaxVocab) {
    throw Error(cat("[data] the tokenizer ", tokenizer.describe(), " has more than ", kMaxVocab, " tokens, but zero's "
                    "data path holds 16-bit tokens: use a tokenizer of at most ", kMaxVocab, " tokens"));
  }
  if (without_gz(path).ends_with(".bin")) {  // tokens already (zero data prepare's, llm.c's): the tokenizer's, if the vocabularies agree
    TokenData d = load_one_file(path, "bin");
    if (static_cast<std::size_t>(d.vocab_size) != tokenizer.vocab_size()) {
      throw Error(cat("[data] ", path, " holds tokens of a vocabulary of ", d.vocab_size,
                      " (its header's, or GPT-2's 50257 when it gives none) but the tokenizer ", tokenizer.describe(), " has ",
                      tokenizer.vocab_size(), ": the file was made with another tokenizer; give the tokenizer it was made with"));
    }
    return d;
  }
  std::string text = read_data_file(path);
  if (is_gzip(text)) text = gunzip(text, path, kMaxDataFileBytes);
  check_text(text, path);
  const std::vector<TokenId> ids = tokenizer.encode(text);
  std::vector<std::uint16_t> tokens(ids.begin(), ids.end());  // every id < vocab_size <= 65536
  TokenData data = tokens_in_memory(std::move(tokens), static_cast<int>(tokenizer.vocab_size()), path, "text");
  return data;
}

const char* width_name(const TokenData& d) {
  return d.format == "bin" ? "llm.c .bin, 2-byte tokens" : d.tokens.width() == 1 ? "text, 1-byte tokens" : "text, tokenized";
}

// The files' tokens one after another, as one data set.
TokenData join_files(const std::string& pattern, const std::vector<std::string>& files,
                     const std::function<TokenData(const std::string&)>& load) {
  if (files.size() == 1) return load(files.front());
  std::vector<TokenData> each;
  for (const std::string& f : files) {
    each.push_back(load(f));
    const TokenData& first = each.front();
    const TokenData& d = each.back();
    if (d.format != first.format || d.tokens.width() != first.tokens.width()) {
      throw Error(cat("[data] ", pattern, " matches files of different kinds: ", first.source, " (", width_name(first), ") and ",
                      d.source, " (", width_name(d), "); name files of one kind (all .bin or all text)"));
    }
  }
  TokenData all;
  std::vector<TokenSpan> spans;
  auto storages = std::make_shared<std::vector<std::shared_ptr<const void>>>();
  for (TokenData& d : each) {
    spans.push_back(d.tokens);
    storages->push_back(std::move(d.storage));
    all.vocab_size = std::max(all.vocab_size, d.vocab_size);
    all.mapped_bytes += d.mapped_bytes;
    all.private_bytes += d.private_bytes;
  }
  all.tokens = TokenSpan::join(std::move(spans));
  all.source = cat(pattern, " (", files.size(), " files)");
  all.format = each.front().format;
  all.storage = std::move(storages);
  return all;
}

}  // namespace

std::vector<std::string> data_files(const std::string& path) {
  std::error_code ec;
  if (path.find_first_of("*?[") == std::string::npos || std::filesystem::exists(path, ec)) return {path};
  glob_t g{};
  const int rc = ::glob(path.c_str(), 0, nullptr, &g);  // unreadable folders: no match, said below
  std::vector<std::string> files;
  if (rc == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) {
      if (!std::filesystem::is_directory(g.gl_pathv[i], ec)) files.emplace_back(g.gl_pathv[i]);
    }
  }
  ::globfree(&g);
  if (files.empty()) {
    throw Error(cat("[data] ", path, " matches no file: check the pattern (shell-style * ? [..], quoted so that the shell "
                    "leaves it to zero), that its folder exists and can be read"));
  }
  std::sort(files.begin(), files.end());  // glob sorts by the locale; shards go in byte order of their names
  return files;
}

TokenData load_tokens(const std::string& path, const std::string& format) {
  return join_files(path, data_files(path), [&](const std::string& f) { return load_one_file(f, format); });
}

TokenData tokenize_file(const std::string& path, const Tokenizer& tokenizer) {
  return join_files(path, data_files(path), [&](const std::string& f) { return tokenize_one_file(f, tokenizer); });
}

std::string default_text_path() {
  std::error_code ec;
  if (std::filesystem::is_regular_file(kDefaultTextPath, ec)) return kDefaultTextPath;
  throw Error(cat("[data] the default text ", kDefaultTextPath, " is missing: run scripts/setup.sh (it installs "
                  "Debian's package ", kDefaultTextPackage, "), or pass your own text file with --data FILE. If ",
                  kDefaultTextPackage, " is installed and the file is still missing, dpkg is set to skip "
                  "/usr/share/doc (see /etc/dpkg/dpkg.cfg.d/); allow it there and reinstall the package"));
}

}  // namespace zero::data
