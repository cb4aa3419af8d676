// libFuzzer harness: the data readers (src/data). The first input byte picks the file's name and
// the declared format; the next two pick a sequence length and a validation fraction; the rest
// is the file. The file is loaded as zero train loads it (load_tokens: text, llm.c .bin, gzip),
// the same bytes go through the in-memory readers too (gunzip, parse_token_file, tokenize_text),
// and loaded tokens are split, batched and cut into validation windows within the documented
// contracts of batches.h. A refusal must be a zero::Error (see fuzz_guard.h).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/batches.h"
#include "data/gzip.h"
#include "data/load.h"
#include "data/token_file.h"
#include "fuzz/fuzz_guard.h"

namespace {

using namespace zero;

void batch_everything(const data::TokenData& d, int seq_len, double val_fraction) {
  const data::TokenSplit split = data::split_tokens(d, val_fraction, seq_len);
  std::vector<std::int32_t> in, tgt;
  const data::TokenBatches batches(split.train, seq_len, 7);
  for (int world = 1; world <= 3; ++world) {
    const int global_batch = 6;
    for (int r = 0; r < world; ++r) {
      const data::SequenceRange s = data::batch_slice(global_batch, world, r);
      in.resize(static_cast<std::size_t>(s.count) * seq_len);
      tgt.resize(in.size());
      batches.fill(3, s.first, s.count, in.data(), tgt.data());
    }
  }
  if (split.validation.empty()) return;
  const data::ValidationWindows windows(split.validation, seq_len, 5);
  for (int world = 1; world <= 3; ++world) {
    for (int r = 0; r < world; ++r) {
      const data::SequenceRange s = data::batch_slice(windows.count(), world, r);
      in.resize(static_cast<std::size_t>(s.count) * seq_len);
      tgt.resize(in.size());
      windows.fill(s.first, s.count, in.data(), tgt.data());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  static const char* const kNames[] = {"data.txt", "data.bin", "data.txt.gz", "data.bin.gz"};
  static const char* const kFormats[] = {"auto", "text", "bin"};
  const char* name = kNames[data[0] & 3];
  const char* format = kFormats[(data[0] >> 2) % 3];
  const int seq_len = 1 + data[1] % 64;
  const double val_fraction = (data[2] % 10) / 10.0;  // 0, 0.1, ..., 0.9
  const std::string_view bytes(reinterpret_cast<const char*>(data + 3), size - 3);

  fuzz::expect_only_zero_errors("gunzip", [&] { data::gunzip(bytes, "input"); });
  fuzz::expect_only_zero_errors("parse_token_file", [&] { data::parse_token_file(bytes, "input"); });
  fuzz::expect_only_zero_errors("tokenize_text", [&] { data::tokenize_text(bytes, "input"); });
  const std::string path = fuzz::scratch_file(name, bytes.data(), bytes.size());
  fuzz::expect_only_zero_errors("load_tokens", [&] {
    const data::TokenData d = data::load_tokens(path, format);
    batch_everything(d, seq_len, val_fraction);
  });
  return 0;
}
