// Tokens per second of zero's GPT-2 BPE on one file, one thread, from a cold word cache (the
// tokenizer is read from its files first; that and the file's reading are not timed).
//   gpt2_bpe_speed TOKENIZER FILE      (FILE may be gzip-compressed)
// prints "tokens N seconds S". bench/tokenizer_speed.sh runs it beside the JavaScript references.
#include <chrono>
#include <cstdio>
#include <exception>

#include "common/input_file.h"
#include "data/gzip.h"
#include "data/tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gpt2_bpe_speed TOKENIZER FILE\n");
    return 2;
  }
  try {
    const auto tokenizer = zero::data::open_tokenizer(argv[1]);
    std::string text = zero::read_input_file({argv[2], "bench", "text file"});
    if (zero::data::is_gzip(text)) text = zero::data::gunzip(text, argv[2]);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<zero::data::TokenId> ids = tokenizer->encode(text);
    const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
    std::printf("tokens %zu seconds %.3f\n", ids.size(), seconds.count());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
