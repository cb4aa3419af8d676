// Training and validation batches from a token stream.
//
// Words used here:
//   sequence      T+1 consecutive tokens; its first T are a row of inputs, its last T the
//                 targets (the next token at every position).
//   global batch  the B sequences of one optimizer step, over all ranks and micro-batches.
//                 Sequence i of global batch s starts at an offset drawn counter-based from
//                 (seed, s, i), so the global batch depends on nothing else: not on the number
//                 of ranks, nor on who reads which sequence, nor on what was read before.
//   slice         the sequences [first, first + count) of a global batch that one rank (or one
//                 micro-batch of one rank) reads; slices of different ranks are disjoint.
// Training draws offsets with replacement (like nanoGPT's get_batch); validation walks fixed,
// non-overlapping windows, so every evaluation sees the same tokens.
#pragma once

#include <cstdint>
#include <span>

#include "data/token_file.h"

namespace zero::data {

// The last `validation` part of the tokens is held out.
struct TokenSplit {
  TokenSpan train;
  TokenSpan validation;  // empty when val_fraction is 0
};

// Splits data.tokens: the last floor(n * val_fraction) tokens are validation, the rest train.
// val_fraction in [0, 1); 0 means no validation split. Each non-empty split must hold at least
// one sequence (seq_len + 1 tokens); otherwise zero::Error says the file is shorter than one
// sequence and how many tokens it needs. The spans point into `data`'s storage.
TokenSplit split_tokens(const TokenData& data, double val_fraction, int seq_len);

// The fewest tokens split_tokens accepts for val_fraction and seq_len, or -1 when even 2^62 tokens
// would leave a split shorter than one sequence (val_fraction within about 1e-18 of 0 or of 1).
// Found by bisection: both splits grow with the token count, so the answer is the first count
// at which both hold a sequence.
std::int64_t min_split_tokens(double val_fraction, int seq_len);

struct SequenceRange {
  int first = 0;  // index of the first sequence within the global batch
  int count = 0;
};

// Rank `rank` of `world_size` reads sequences [rank*B/N, (rank+1)*B/N) of a global batch of B.
SequenceRange batch_slice(int global_batch, int world_size, int rank);
// Micro-batch `micro_step` of `accumulation_steps` within that rank's slice, split the same way.
SequenceRange micro_batch_slice(int global_batch, int world_size, int rank, int accumulation_steps, int micro_step);

// A fingerprint of which tokens sequences [first, first + count) of a global batch hold:
// the sum (mod 2^64) over the sequences of a 64-bit hash of (the sequence's index in the global
// batch, its T inputs, its last target). A sum, so the ranks' and micro-batches' parts add up to
// the whole global batch's, however it was sliced: two runs read the same tokens at the same
// places of a step exactly when their step's sums agree (up to hash collisions). `inputs` and
// `targets` are (count, T) as TokenBatches::fill writes them.
std::uint64_t batch_digest(int first, int count, int seq_len, const std::int32_t* inputs, const std::int32_t* targets);

class TokenBatches {
 public:
  // `tokens` (usually the train split) must outlive this object and hold >= seq_len + 1 tokens.
  TokenBatches(TokenSpan tokens, int seq_len, std::uint64_t seed);

  int seq_len() const { return seq_len_; }

  // Where sequence `sequence` of global batch `batch_index` starts in the tokens.
  std::int64_t sequence_offset(std::int64_t batch_index, int sequence) const;

  // Sequences [first_sequence, first_sequence + count) of global batch `batch_index`:
  //   inputs  (count, T) int32: tokens [offset, offset + T)
  //   targets (count, T) int32: tokens [offset + 1, offset + T + 1)
  // From a mapped file, zero::Error if the file changed under the run (common/mapped_file.h).
  void fill(std::int64_t batch_index, int first_sequence, int count, std::int32_t* inputs,
            std::int32_t* targets) const;

 private:
  TokenSpan tokens_;    // (n) not owned
  int seq_len_;         // T
  std::uint64_t key_;                       // the seed, mixed with the stream's name
};

// How `windows` validation windows are spread over `world_size` ranks that evaluate `micro_batch`
// sequences per forward pass: rank r takes windows batch_slice(windows, N, r), B per pass. Every
// rank runs the same number of passes (stage 3 gathers parameters in each), so a rank whose
// share is smaller than the largest pads its last passes (and a rank with no window pads all).
// validation_passes: the passes each rank runs, ceil(ceil(windows / N) / B).
int validation_passes(int windows, int world_size, int micro_batch);
// The windows of pass `pass` on rank `rank`: count <= B real windows (0 in a padded pass).
SequenceRange validation_pass(int windows, int world_size, int rank, int micro_batch, int pass);

class ValidationWindows {
 public:
  // Window w is the sequence at offset w*T: windows tile the split without overlapping inputs.
  // There are min(max_windows, (n - 1) / T) of them (max_windows <= 0: all). `tokens` must
  // outlive this object and hold >= seq_len + 1 tokens.
  ValidationWindows(TokenSpan tokens, int seq_len, int max_windows);

  int count() const { return count_; }
  int seq_len() const { return seq_len_; }
  std::int64_t offset(int window) const;

  // Windows [first_window, first_window + count) as (count, T) inputs and targets, as in
  // TokenBatches::fill. Split them over ranks with validation_pass().
  void fill(int first_window, int count, std::int32_t* inputs, std::int32_t* targets) const;
  // The same into a (rows, T) micro-batch, rows >= count: the rows past `count` repeat window 0,
  // padding whose loss the caller leaves out.
  void fill_padded(int first_window, int count, int rows, std::int32_t* inputs, std::int32_t* targets) const;

 private:
  TokenSpan tokens_;  // (n) not owned
  int seq_len_;       // T
  int count_;
};

}  // namespace zero::data
