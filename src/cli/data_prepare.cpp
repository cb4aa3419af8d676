#include "cli/data_prepare.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "common/error.h"
#include "common/number_text.h"
#include "data/prepare.h"

namespace zero::cli {
namespace {

const char* kDataUsage = "usage: zero data prepare FILE... --out DIR [flags]\n\n"
                         "  prepare   tokenize text, .gz and JSONL files into llm.c .bin shards (zero data prepare --help)\n";

int default_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

double fraction_flag(const Flags& flags, const std::string& name) {
  const std::string v = flags.get(name);
  const std::optional<long double> x = parse_decimal(v);
  if (!x) throw ConfigError(cat("[cli] --", name, " must be a number such as 0.01, not ", quote_input(v)));
  return static_cast<double>(*x);
}

int prepare_main(const std::vector<std::string>& all_args) {
  // FILE... are the words that are neither flags nor a flag's value.
  const std::vector<FlagSpec> specs = data_prepare_flags();
  std::vector<std::string> inputs, args;
  for (std::size_t i = 0; i < all_args.size(); ++i) {
    const std::string& a = all_args[i];
    if (a.rfind("--", 0) != 0) {
      inputs.push_back(a);
      continue;
    }
    args.push_back(a);
    const std::string name = a.substr(2);
    const bool takes_value = std::any_of(specs.begin(), specs.end(), [&](const FlagSpec& s) { return s.name == name && s.takes_value; });
    if (takes_value && i + 1 < all_args.size()) args.push_back(all_args[++i]);
  }
  Flags flags("zero data prepare", specs, args);
  if (flags.help()) {
    std::printf(
        "Tokenizes text files into llm.c-format .bin shards (DIR/train_000000.bin ..., DIR/val_000000.bin ...)\n"
        "for zero train --data. A text file (or .gz) is one document, a JSONL file one per line; the tokenizer's\n"
        "end-of-text token goes before every document, as llm.c's scripts do.\n"
        "Inputs are the words that are not flags: zero data prepare FILE... --out DIR\n\n%s",
        flags.usage().c_str());
    return 0;
  }
  data::PrepareOptions o;
  o.inputs = inputs;
  o.out_dir = flags.get("out");
  o.tokenizer = flags.get("tokenizer");
  o.shard_tokens = static_cast<std::uint64_t>(flags.get_int("shard-tokens", 1, 2147483647));
  o.threads = static_cast<int>(flags.has("threads") ? flags.get_int("threads", 1, 1024) : default_threads());
  o.chunk_bytes = static_cast<std::size_t>(flags.get_int("chunk-bytes", 1, 1 << 30));
  o.jsonl_field = flags.get("jsonl-field");
  o.skip_bad_lines = flags.has("skip-bad-lines");
  if (flags.has("val-fraction")) o.val_fraction = fraction_flag(flags, "val-fraction");
  o.val_file = flags.get("val-file");
  const bool tty = isatty(2);
  if (tty) {
    o.progress = [](const data::PrepareProgress& p) {
      std::fprintf(stderr, "\r[prepare] %.1f MB read, %.2f M tokens, %.2f M tokens/s   ", p.bytes_read / 1e6, p.tokens_written / 1e6,
                   p.seconds > 0 ? p.tokens_written / p.seconds / 1e6 : 0.0);
    };
  }
  const data::PrepareReport r = data::prepare_shards(o);
  if (tty) std::fprintf(stderr, "\n");
  const double tokens = static_cast<double>(r.train_tokens + r.val_tokens);
  std::printf("prepared %s: %zu documents, %.1f MB of text, tokenizer %s\n", o.out_dir.c_str(), static_cast<std::size_t>(r.documents),
              r.bytes_read / 1e6, r.tokenizer.c_str());
  std::printf("train: %llu tokens in %zu shards; val: %llu tokens in %zu shards\n", static_cast<unsigned long long>(r.train_tokens),
              r.train_shards.size(), static_cast<unsigned long long>(r.val_tokens), r.val_shards.size());
  if (r.bad_lines > 0) {
    std::printf("skipped %llu bad lines (first: %s)\n", static_cast<unsigned long long>(r.bad_lines), r.first_bad_line.c_str());
  }
  const double per_s = r.seconds > 0 ? tokens / r.seconds : 0.0;
  std::printf("%.2f s, %.0f tokens/s on %d threads (%.0f tokens/s per thread)\n", r.seconds, per_s, o.threads, per_s / o.threads);
  return 0;
}

}  // namespace

std::vector<FlagSpec> data_prepare_flags() {
  return {{"out", "the folder for the shards: new or empty", true, ""},
          {"tokenizer", "bytes, a GPT-2 vocab.json/encoder.json, a SentencePiece .model or a model directory (as zero train)", true, "bytes"},
          {"shard-tokens", "tokens per shard (the last shard of each split may hold fewer)", true, "100000000"},
          {"chunk-bytes", "text per tokenizer task; also the unit --val-fraction picks", true, "262144"},
          {"threads", "tokenizer threads", true, "nproc"},
          {"jsonl-field", "every input is JSONL, the document in this string field (default: *.jsonl files, field text)", true, ""},
          {"skip-bad-lines", "skip JSONL lines that are not JSON or lack the field, and count them (default: an error)", false, ""},
          {"val-fraction", "about this fraction of the text, spread evenly, makes the val shards", true, "0"},
          {"val-file", "this file's documents make the val shards", true, ""}};
}

int data_main(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "prepare") return prepare_main({args.begin() + 1, args.end()});
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("%s", kDataUsage);
    return args.empty() ? 2 : 0;
  }
  throw ConfigError(cat("[cli] zero data has no command '", args[0], "': use zero data prepare (zero data --help)"));
}

}  // namespace zero::cli
