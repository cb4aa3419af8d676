// The error-compensated 1-bit all-reduce of 1-bit Adam (Tang et al., 2021; DeepSpeed's
// NcclBackend/MpiBackend compressed_allreduce), averaging a set of f32 tensors over the ranks
// with one sign bit per element and one f32 scale per tensor and chunk on the wire.
//
// Words: a tensor of n elements is zero-extended to C = n rounded up to a multiple of
// N * lcm(N, 8) (DeepSpeed's padding), and cut into N chunks of c = C / N elements; rank j is the
// "server" of chunk j of every tensor. s(x) is +1 for x >= 0 (and for -0 and NaN), else -1: one
// bit cannot say 0. norm: the Euclidean norm, summed in double, left to right.
//
// Per tensor, on each rank (worker):
//   b = x + worker_error                          (C elements; x zero-extended)
//   scale = norm(b) / sqrt(C)                     worker_error = b - scale * s(b)
//   phase 1: chunk j's sign bits to rank j (an all-to-all), every worker scale to every rank
// and on rank j (server of chunk j):
//   y = sum over ranks i, in rank order, of s_i * (scale_i * (1/N))   + server_error   (c elements)
//   server_scale = norm(y) / sqrt(c)              server_error = y - server_scale * s(y)
//   phase 2: the server's sign bits and its scale to every rank (all-gathers)
// and the result on every rank: x[j * c + i] = server_scale_j * s(y_j[i]), for i < n.
//
// The all-to-all is built on the Communicator's public collectives: the ranks meet in pairs, N-1
// rounds of disjoint pairs (the circle method; with N odd one rank sits each round out), each
// pair a 2-rank communicator split once from the world, exchanging with a 2-rank all_gather. All
// tensors of one call travel together (one exchange per round, one all_gather of each kind).
//
// Bytes each rank sends per call, with B = sum of C_t / (8 N) over the T tensors:
//   (N-1) B         phase 1 signs (pair communicators: pair_traffic())
//   (N-1) 4 T       phase 1 worker scales (the world's all_gather)
//   (N-1) B         phase 2 server signs (the world's all_gather)
//   (N-1) 4 T       phase 2 server scales (the world's all_gather)
// in all 2 (N-1) (B + 4 T): about 1/32 of an f32 all-reduce's 8 (N-1) n / N. The sums run in a
// fixed order on every rank, so a run is reproducible bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.h"

namespace zero {

class CompressedAllReduce {
 public:
  // `sizes`: the elements of each tensor every call reduces, in order. Collective over `world`
  // (it splits the pair communicators); world.size() >= 2.
  CompressedAllReduce(Communicator& world, std::vector<std::size_t> sizes);
  ~CompressedAllReduce();
  CompressedAllReduce(const CompressedAllReduce&) = delete;
  CompressedAllReduce& operator=(const CompressedAllReduce&) = delete;

  // C for a tensor of n elements over `ranks` ranks (see the top of this file).
  static std::size_t padded_size(std::size_t n, int ranks);
  // Elements of worker_error (sum of C_t) and server_error (sum of C_t / N) run() takes.
  std::size_t worker_error_size() const { return worker_total_; }
  std::size_t server_error_size() const { return worker_total_ / static_cast<std::size_t>(ranks_); }
  // The bytes one call sends per rank (the formula above), and the part through the pair communicators.
  std::uint64_t bytes_per_call() const;
  // What the pair communicators have counted so far (the world's counters hold the rest).
  Traffic pair_traffic() const;

  // Averages tensors[t] (sizes[t] elements each) over the ranks, in place, through the
  // compression above; worker_error (worker_error_size()) and server_error (server_error_size())
  // are this rank's error feedback, carried from call to call (zero at the start). A collective.
  void run(const std::vector<std::span<float>>& tensors, std::span<float> worker_error, std::span<float> server_error);

 private:
  // Phase 1's all-to-all: `send` holds N blocks of block_ bytes, block j for rank j; `recv` gets
  // rank j's block for this rank in its block j.
  void exchange(const std::vector<std::uint8_t>& send, std::vector<std::uint8_t>& recv);
  // Builds one rank's worker bits (into send, peer-major) and scale per tensor; updates the worker error.
  void compress_workers(const std::vector<std::span<float>>& tensors, std::span<float> worker_error,
                        std::vector<std::uint8_t>& send, std::vector<float>& scales) const;
  // The server's chunks from every rank's bits and scales: its bits (block_ bytes) and scale per tensor.
  void compress_servers(const std::vector<std::uint8_t>& recv, const std::vector<float>& worker_scales,
                        std::span<float> server_error, std::vector<std::uint8_t>& bits, std::vector<float>& scales) const;

  Communicator& world_;
  int ranks_, rank_;
  std::vector<std::size_t> sizes_;       // (T) elements of each tensor
  std::vector<std::size_t> padded_;      // (T) C_t
  std::size_t worker_total_ = 0;         // sum of C_t
  std::size_t block_ = 0;                // B: bytes of one rank's chunk of every tensor
  std::vector<int> partner_;             // (rounds) this rank's partner each round; -1: sits out
  std::vector<std::unique_ptr<Communicator>> pairs_;  // (rounds) 2-rank communicators (null when sitting out)
};

}  // namespace zero
