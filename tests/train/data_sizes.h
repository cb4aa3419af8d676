// Test helper: zero::train() on text files of many sizes, for the thread and the MPI sweeps.
//
// The text is Debian's license texts (/usr/share/common-licenses, from base-files), not text made
// for the test; a file of `bytes` bytes is its first `bytes` bytes. The model is zero train's
// built-in setup (T = 64, B = 8 per rank, val_fraction 0.05 unless asked) made narrow, since the
// split and window arithmetic depends on T, B, the ranks and val_fraction, not on the width.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "config/config.h"
#include "data/batches.h"
#include "train/trainer.h"

namespace zero::testing {

inline constexpr int kSweepSeqLen = 64;

// Every regular file of /usr/share/common-licenses, in name order, concatenated (about 300 KB).
inline const std::string& license_text() {
  static const std::string text = [] {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator("/usr/share/common-licenses"))
      if (e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::string all;
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      all += std::string(std::istreambuf_iterator<char>(in), {});
    }
    return all;
  }();
  return text;
}

// The first `bytes` bytes of the license text, cut back to a whole UTF-8 character.
inline std::string license_prefix(std::size_t bytes) {
  const std::string& text = license_text();
  bytes = std::min(bytes, text.size());
  while (bytes > 0 && bytes < text.size() && (static_cast<unsigned char>(text[bytes]) & 0xC0) == 0x80) --bytes;
  return text.substr(0, bytes);
}

inline TrainConfig sweep_config(int world_size, double val_fraction, int micro_batch = 8) {
  const nlohmann::json j = {{"train_micro_batch_size_per_gpu", micro_batch},
                            {"gradient_accumulation_steps", 1},
                            {"train_steps", 1},
                            {"zero_optimization", {{"stage", 1}}},
                            {"model", {{"type", "gpt"}, {"vocab_size", 256}, {"n_ctx", kSweepSeqLen}, {"n_embd", 8},
                                       {"n_layer", 1}, {"n_head", 2}}},
                            {"data", {{"val_fraction", val_fraction}}}};
  return parse_config(j, world_size);
}

// The sizes of the sweep: the smallest file split_tokens accepts, then every `step` bytes up to
// `largest`, and `largest` itself.
inline std::vector<std::size_t> sweep_sizes(double val_fraction, std::size_t step, std::size_t largest) {
  const auto smallest = static_cast<std::size_t>(data::min_split_tokens(val_fraction, kSweepSeqLen));
  std::vector<std::size_t> sizes;
  for (std::size_t s = smallest; s < largest; s += step) sizes.push_back(s);
  sizes.push_back(largest);
  return sizes;
}

struct SizeResult {
  std::size_t bytes = 0;
  std::string error;  // empty: train() returned
  TrainResult result;
};

// One training step on a file of `bytes` bytes written at `path`; every rank of `comm` calls it.
inline SizeResult train_on_size(Communicator& comm, std::size_t bytes, const std::string& path, double val_fraction) {
  SizeResult r;
  r.bytes = bytes;
  TrainOptions o;
  o.config = sweep_config(comm.size(), val_fraction);
  o.data_path = path;
  try {
    r.result = train(o, comm);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

// The text each rank of the identity tests reads (issue 21): rank 0 the license prefix of `bytes`
// bytes; the last rank, when `differ`, the same size with one byte changed at `at` (size and
// vocabulary agree, only the contents differ), or a longer prefix when `at` is past the end.
inline std::string rank_text(std::size_t bytes, bool last_rank_differs, std::size_t at) {
  std::string text = license_prefix(at < bytes ? bytes : bytes + 97);
  if (last_rank_differs && at < bytes) text[at] = text[at] == 'x' ? 'y' : 'x';
  return last_rank_differs ? text : license_prefix(bytes);
}

inline void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Whether a sweep result is what the fix promises: training ran, with a finite loss, and a
// validation loss (finite, >= 0) exactly when val_fraction holds tokens out. "" or the failure.
inline std::string sweep_failure(const SizeResult& r, double val_fraction) {
  std::ostringstream why;
  if (!r.error.empty()) {
    why << r.bytes << " bytes: " << r.error;
  } else if (r.result.losses.size() != 1 || !std::isfinite(r.result.losses[0])) {
    why << r.bytes << " bytes: no finite training loss";
  } else if (val_fraction > 0 && !(r.result.first_val_loss >= 0 && std::isfinite(r.result.first_val_loss) &&
                                   r.result.final_val_loss >= 0 && std::isfinite(r.result.final_val_loss))) {
    why << r.bytes << " bytes: no validation loss (" << r.result.first_val_loss << ", " << r.result.final_val_loss << ")";
  } else if (val_fraction == 0 && r.result.first_val_loss != -1) {
    why << r.bytes << " bytes: a validation loss without a validation split";
  }
  return why.str();
}

}  // namespace zero::testing
