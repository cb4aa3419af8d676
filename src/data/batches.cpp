#include "data/batches.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/number_text.h"
#include "partition/init.h"

namespace zero::data {
namespace {

std::int64_t validation_size(std::int64_t n, double val_fraction) {
  return static_cast<std::int64_t>(std::floor(static_cast<double>(n) * val_fraction));
}

// Whether n tokens split at val_fraction give each split (validation only when val_fraction > 0)
// at least `need` tokens.
bool splits_hold(std::int64_t n, double val_fraction, std::int64_t need) {
  const std::int64_t n_val = validation_size(n, val_fraction);
  return n - n_val >= need && (val_fraction <= 0.0 || n_val >= need);
}

// Copies the sequence at `offset` into one row of inputs and one row of targets.
void copy_sequence(const TokenSpan& tokens, std::int64_t offset, int seq_len, std::int32_t* inputs, std::int32_t* targets) {
  const auto at = static_cast<std::size_t>(offset);
  tokens.read(at, static_cast<std::size_t>(seq_len), inputs);
  tokens.read(at + 1, static_cast<std::size_t>(seq_len), targets);
}

}  // namespace

TokenSplit split_tokens(const TokenData& data, double val_fraction, int seq_len) {
  if (!(val_fraction >= 0.0 && val_fraction < 1.0)) {
    throw ConfigError(cat("[data] val_fraction ", val_fraction, " must be in [0, 1) (0: no validation split)"));
  }
  if (seq_len < 1) throw ConfigError(cat("[data] seq_len ", seq_len, " must be at least 1"));
  const auto n = static_cast<std::int64_t>(data.tokens.size());
  const std::int64_t n_val = validation_size(n, val_fraction);
  const std::int64_t need = std::int64_t{seq_len} + 1;
  const bool train_short = n - n_val < need;
  const bool val_short = val_fraction > 0.0 && n_val < need;
  if (train_short || val_short) {
    const std::int64_t needed = min_split_tokens(val_fraction, seq_len);
    const std::string advice = needed > 0 ? cat("the file needs at least ", needed, " tokens: use a longer file or a smaller seq_len")
                                          : std::string("no file is long enough: use a val_fraction further from 0 and 1");
    throw Error(cat("[data] ", data.source, " is shorter than one sequence: its ", train_short ? "training" : "validation",
                    " split has ", train_short ? n - n_val : n_val, " of its ", n, " tokens, but a sequence of seq_len ",
                    seq_len, " needs ", need, "; with val_fraction ", shortest_decimal(val_fraction), " ", advice));
  }
  return {data.tokens.first(static_cast<std::size_t>(n - n_val)), data.tokens.last(static_cast<std::size_t>(n_val))};
}

std::int64_t min_split_tokens(double val_fraction, int seq_len) {
  const std::int64_t need = std::int64_t{seq_len} + 1;
  std::int64_t lo = need, hi = std::int64_t{1} << 62;  // splits_hold(lo - 1) is false
  if (!splits_hold(hi, val_fraction, need)) return -1;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (splits_hold(mid, val_fraction, need)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

SequenceRange batch_slice(int global_batch, int world_size, int rank) {
  ZERO_CHECK(world_size > 0 && rank >= 0 && rank < world_size && global_batch >= 0, "rank ", rank, " of ",
             world_size, ", batch ", global_batch);
  // 64-bit products: rank * B may pass 2^31 for large batches on many ranks.
  const auto first = static_cast<int>(std::int64_t{rank} * global_batch / world_size);
  const auto end = static_cast<int>(std::int64_t{rank + 1} * global_batch / world_size);
  return {first, end - first};
}

SequenceRange micro_batch_slice(int global_batch, int world_size, int rank, int accumulation_steps, int micro_step) {
  const SequenceRange own = batch_slice(global_batch, world_size, rank);
  const SequenceRange part = batch_slice(own.count, accumulation_steps, micro_step);
  return {own.first + part.first, part.count};
}

int validation_passes(int windows, int world_size, int micro_batch) {
  ZERO_CHECK(windows >= 0 && world_size > 0 && micro_batch > 0, windows, " windows, ", world_size, " ranks, B ", micro_batch);
  const std::int64_t most = (std::int64_t{windows} + world_size - 1) / world_size;  // the largest rank's share
  return static_cast<int>((most + micro_batch - 1) / micro_batch);
}

SequenceRange validation_pass(int windows, int world_size, int rank, int micro_batch, int pass) {
  ZERO_CHECK(pass >= 0 && pass < validation_passes(windows, world_size, micro_batch), "pass ", pass);
  const SequenceRange own = batch_slice(windows, world_size, rank);
  const std::int64_t done = std::int64_t{pass} * micro_batch;  // this rank's windows in earlier passes
  const auto count = static_cast<int>(std::clamp<std::int64_t>(own.count - done, 0, micro_batch));
  return {count > 0 ? own.first + static_cast<int>(done) : 0, count};
}

TokenBatches::TokenBatches(TokenSpan tokens, int seq_len, std::uint64_t seed)
    : tokens_(tokens), seq_len_(seq_len), key_(seed ^ hash_name("zero/data/train")) {
  if (seq_len < 1) throw ConfigError(cat("[data] seq_len ", seq_len, " must be at least 1"));
  if (tokens.size() < static_cast<std::size_t>(seq_len) + 1) {
    throw Error(cat("[data] the training tokens (", tokens.size(), ") are shorter than one sequence of seq_len ",
                    seq_len, " (", seq_len + 1, " tokens): use a longer file or a smaller seq_len"));
  }
}

std::int64_t TokenBatches::sequence_offset(std::int64_t batch_index, int sequence) const {
  ZERO_CHECK(batch_index >= 0 && batch_index < (std::int64_t{1} << 32), "batch ", batch_index);
  ZERO_CHECK(sequence >= 0, "sequence ", sequence);
  // One counter per (batch, sequence): the offset is a pure function of the seed and the pair.
  const std::uint64_t counter = (static_cast<std::uint64_t>(batch_index) << 32) | static_cast<std::uint32_t>(sequence);
  const auto starts = static_cast<std::int64_t>(tokens_.size()) - seq_len_;  // offsets 0 .. n-T-1
  const auto offset = static_cast<std::int64_t>(counter_uniform(key_, counter) * static_cast<double>(starts));
  return std::min(offset, starts - 1);
}

void TokenBatches::fill(std::int64_t batch_index, int first_sequence, int count, std::int32_t* inputs,
                        std::int32_t* targets) const {
  ZERO_CHECK(first_sequence >= 0 && count >= 0, "sequences ", first_sequence, " + ", count);
  for (int i = 0; i < count; ++i) {
    const std::int64_t offset = sequence_offset(batch_index, first_sequence + i);
    const std::size_t row = static_cast<std::size_t>(i) * seq_len_;
    copy_sequence(tokens_, offset, seq_len_, inputs + row, targets + row);
  }
}

ValidationWindows::ValidationWindows(TokenSpan tokens, int seq_len, int max_windows)
    : tokens_(tokens), seq_len_(seq_len), count_(0) {
  if (seq_len < 1) throw ConfigError(cat("[data] seq_len ", seq_len, " must be at least 1"));
  const std::int64_t available = tokens.empty() ? 0 : static_cast<std::int64_t>(tokens.size() - 1) / seq_len;
  if (available == 0) {
    throw Error(cat("[data] the validation tokens (", tokens.size(), ") are shorter than one sequence of seq_len ",
                    seq_len, " (", seq_len + 1, " tokens): use a longer file or a larger val_fraction"));
  }
  const std::int64_t wanted = max_windows > 0 ? std::min<std::int64_t>(max_windows, available) : available;
  count_ = static_cast<int>(std::min<std::int64_t>(wanted, INT32_MAX));
}

std::int64_t ValidationWindows::offset(int window) const {
  ZERO_CHECK(window >= 0 && window < count_, "window ", window, " of ", count_);
  return std::int64_t{window} * seq_len_;
}

void ValidationWindows::fill(int first_window, int count, std::int32_t* inputs, std::int32_t* targets) const {
  ZERO_CHECK(first_window >= 0 && count >= 0 && first_window + count <= count_, "windows ", first_window, " + ",
             count, " of ", count_);
  for (int i = 0; i < count; ++i) {
    const std::size_t row = static_cast<std::size_t>(i) * seq_len_;
    copy_sequence(tokens_, offset(first_window + i), seq_len_, inputs + row, targets + row);
  }
}

void ValidationWindows::fill_padded(int first_window, int count, int rows, std::int32_t* inputs,
                                    std::int32_t* targets) const {
  ZERO_CHECK(count <= rows, count, " windows in ", rows, " rows");
  fill(first_window, count, inputs, targets);
  for (int i = count; i < rows; ++i) {
    const std::size_t row = static_cast<std::size_t>(i) * seq_len_;
    copy_sequence(tokens_, offset(0), seq_len_, inputs + row, targets + row);
  }
}

std::uint64_t batch_digest(int first, int count, int seq_len, const std::int32_t* inputs, const std::int32_t* targets) {
  std::uint64_t sum = 0;
  for (int j = 0; j < count; ++j) {
    std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the index and the tokens, then a finalizer
    auto mix = [&h](std::uint64_t v) {
      for (int b = 0; b < 8; ++b) h = (h ^ ((v >> (8 * b)) & 0xff)) * 0x100000001b3ULL;
    };
    mix(static_cast<std::uint64_t>(first + j));
    const std::int32_t* row = inputs + static_cast<std::ptrdiff_t>(j) * seq_len;
    for (int t = 0; t < seq_len; ++t) mix(static_cast<std::uint32_t>(row[t]));
    mix(static_cast<std::uint32_t>(targets[static_cast<std::ptrdiff_t>(j) * seq_len + seq_len - 1]));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    sum += h;
  }
  return sum;
}

}  // namespace zero::data
