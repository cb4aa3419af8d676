// Loading a data file into tokens, whatever its format, and the default text.
//
// Formats: "text" is any UTF-8 text, tokenized by bytes (vocabulary 256); "bin" is llm.c's
// pre-tokenized GPT-2 token file (see token_file.h); "auto" picks by the name: *.bin is bin,
// anything else is text. A gzip-compressed file (notes.txt.gz, train.bin.gz) is decompressed
// first and its format judged by the name without ".gz".
//
// Memory: a file is mapped read-only and shared (common/mapped_file.h), not read: the ranks of a
// host hold one copy of it, the page cache's, and byte tokens are the text's own bytes, so text
// is never tokenised into a second array. A gzip file is decompressed into each process's memory
// (its decompressed size once per rank); so is a file whose size the file system does not give
// (/proc files). TokenData's mapped_bytes and private_bytes say which.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/token_file.h"
#include "data/tokenizer.h"

namespace zero::data {

// A data path may be a shell-style pattern (`shards/train_*.bin`): when it has * ? or [ and no file
// has that very name, it names the files glob(3) matches, in byte order of their names, read one
// after another as one data set (a sequence may run from one file into the next, as in the
// concatenated file). The files must be of one kind (all .bin or all text). Each .bin holds at most
// 2^31-1 tokens, as llm.c's header counts them in an int32 (llm.c's answer: more shards); together
// they may hold any number.
//
// The files `path` names: {path} itself, or the pattern's matches. zero::Error when a pattern
// matches no file.
std::vector<std::string> data_files(const std::string& path);

// Throws zero::Error ("[data] <path> ...", saying what to do) for a missing file, an empty one,
// text that is not valid UTF-8, a .bin with a wrong magic, version or size, and a file whose
// content is not the format its name (or `format`) says; zero::ConfigError for an unknown
// format name.
TokenData load_tokens(const std::string& path, const std::string& format = "auto");

// The tokens of the text file at `path` (gzip allowed, checked as load_tokens checks text) made by
// `tokenizer`, held in this process's memory. zero::Error when the vocabulary does not fit the
// data path's 16-bit tokens (more than 65536 ids). A `.bin` (`.bin.gz`) holds tokens already: it
// is read as load_tokens reads it, and zero::Error when its vocabulary is not the tokenizer's.
TokenData tokenize_file(const std::string& path, const Tokenizer& tokenizer);

// Byte tokens of `text` (a copy), checked to be non-empty UTF-8; `name` is the source named in errors.
TokenData tokenize_text(std::string_view text, const std::string& name);

// The default training text: the Jargon File (version 4.4.7, public domain), English prose
// about hacker culture and slang, about 1.7 MB once decompressed. Debian 12 ships it in the
// package jargon-text (section doc, main), which scripts/setup.sh installs.
inline constexpr const char* kDefaultTextPackage = "jargon-text";
inline constexpr const char* kDefaultTextPath = "/usr/share/doc/jargon-text/jargon.txt.gz";

// kDefaultTextPath, or zero::Error telling how to install it when it is missing.
std::string default_text_path();

}  // namespace zero::data
