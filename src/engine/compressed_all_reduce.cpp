#include "engine/compressed_all_reduce.h"

#include <cmath>
#include <cstring>
#include <numeric>

#include "common/error.h"
#include "engine/pair_rounds.h"

namespace zero {
namespace {

// One bit per element, the first element in the highest bit of its byte (NumPy's packbits, as
// DeepSpeed's cupy packing): 1 for s(x) = +1.
bool positive(float x) { return !(x < 0.0f); }
float sign_of(bool bit) { return bit ? 1.0f : -1.0f; }
bool bit_at(const std::uint8_t* bytes, std::size_t i) { return ((bytes[i / 8] >> (7 - i % 8)) & 1u) != 0; }
void pack(const float* x, std::size_t n, std::uint8_t* bytes) {
  std::memset(bytes, 0, n / 8);
  for (std::size_t i = 0; i < n; ++i)
    if (positive(x[i])) bytes[i / 8] |= static_cast<std::uint8_t>(1u << (7 - i % 8));
}

// norm(x) / sqrt(n): the scale that keeps the compressed tensor's norm, summed in double.
float rms(const float* x, std::size_t n) {
  double acc = 0.0;
  for (std::size_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return static_cast<float>(std::sqrt(acc) / std::sqrt(static_cast<double>(n)));
}

// x becomes its error after compression: x - scale * s(x); the bits are packed first.
float compress(float* x, std::size_t n, std::uint8_t* bits) {
  const float scale = rms(x, n);
  pack(x, n, bits);
  for (std::size_t i = 0; i < n; ++i) x[i] = x[i] - scale * sign_of(positive(x[i]));
  return scale;
}

}  // namespace

std::size_t CompressedAllReduce::padded_size(std::size_t n, int ranks) {
  const std::size_t quantum = static_cast<std::size_t>(ranks) * std::lcm(static_cast<std::size_t>(ranks), std::size_t{8});
  return (n + quantum - 1) / quantum * quantum;
}

CompressedAllReduce::CompressedAllReduce(Communicator& world, std::vector<std::size_t> sizes)
    : world_(world), ranks_(world.size()), rank_(world.rank()), sizes_(std::move(sizes)) {
  ZERO_CHECK(ranks_ >= 2, "a compressed all-reduce over ", ranks_, " rank");
  const std::size_t n = static_cast<std::size_t>(ranks_);
  for (std::size_t size : sizes_) {
    ZERO_CHECK(size > 0, "a compressed all-reduce of an empty tensor");
    padded_.push_back(padded_size(size, ranks_));
    worker_total_ += padded_.back();
    block_ += padded_.back() / n / 8;
  }
  const int rounds = pair_rounds(ranks_);
  for (int t = 0; t < rounds; ++t) {
    const int p = partner_in_round(rank_, ranks_, t);
    partner_.push_back(p);
    // Every rank takes part in every split; a pair's colour is its lower rank, a rank sitting
    // out gets its own (no pair has it as its lower rank).
    std::unique_ptr<Communicator> pair = world_.split(p < 0 ? rank_ : std::min(rank_, p), rank_);
    pairs_.push_back(p < 0 ? nullptr : std::move(pair));
  }
}

CompressedAllReduce::~CompressedAllReduce() = default;

std::uint64_t CompressedAllReduce::bytes_per_call() const {
  return 2ull * static_cast<std::uint64_t>(ranks_ - 1) * (block_ + 4 * sizes_.size());
}

Traffic CompressedAllReduce::pair_traffic() const {
  Traffic sum;
  for (const auto& pair : pairs_) {
    if (!pair) continue;
    const Traffic t = pair->traffic();
    for (int k = 0; k < kNumCollectives; ++k) {
      sum.sent[k] += t.sent[k];
      sum.received[k] += t.received[k];
      sum.calls[k] += t.calls[k];
      sum.pieces[k] += t.pieces[k];
    }
  }
  return sum;
}

void CompressedAllReduce::exchange(const std::vector<std::uint8_t>& send, std::vector<std::uint8_t>& recv) {
  const std::size_t b = block_;
  std::memcpy(recv.data() + static_cast<std::size_t>(rank_) * b, send.data() + static_cast<std::size_t>(rank_) * b, b);
  std::vector<std::uint8_t> both(2 * b);
  for (std::size_t t = 0; t < pairs_.size(); ++t) {
    const int p = partner_[t];
    if (p < 0) continue;
    pairs_[t]->all_gather_bytes(send.data() + static_cast<std::size_t>(p) * b, b, both.data());
    const std::size_t theirs = p < rank_ ? 0 : 1;  // the pair ranks by world rank
    std::memcpy(recv.data() + static_cast<std::size_t>(p) * b, both.data() + theirs * b, b);
  }
}

void CompressedAllReduce::compress_workers(const std::vector<std::span<float>>& tensors, std::span<float> worker_error,
                                           std::vector<std::uint8_t>& send, std::vector<float>& scales) const {
  const std::size_t n = static_cast<std::size_t>(ranks_);
  std::vector<std::uint8_t> bits;
  std::size_t at = 0, byte = 0;  // tensor t's first element in worker_error; its first byte in a block
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    float* b = worker_error.data() + at;
    for (std::size_t i = 0; i < sizes_[t]; ++i) b[i] = tensors[t][i] + b[i];  // the padding adds 0
    bits.resize(padded_[t] / 8);
    scales[t] = compress(b, padded_[t], bits.data());
    const std::size_t chunk_bytes = padded_[t] / n / 8;
    for (std::size_t j = 0; j < n; ++j) std::memcpy(send.data() + j * block_ + byte, bits.data() + j * chunk_bytes, chunk_bytes);
    at += padded_[t];
    byte += chunk_bytes;
  }
}

void CompressedAllReduce::compress_servers(const std::vector<std::uint8_t>& recv, const std::vector<float>& worker_scales,
                                           std::span<float> server_error, std::vector<std::uint8_t>& bits,
                                           std::vector<float>& scales) const {
  const std::size_t n = static_cast<std::size_t>(ranks_), tensors = sizes_.size();
  const float inv_n = 1.0f / static_cast<float>(ranks_);
  std::size_t at = 0, byte = 0;
  for (std::size_t t = 0; t < tensors; ++t) {
    const std::size_t c = padded_[t] / n;
    float* y = server_error.data() + at;
    for (std::size_t i = 0; i < c; ++i) {
      float sum = 0.0f;
      for (std::size_t r = 0; r < n; ++r) sum += sign_of(bit_at(recv.data() + r * block_ + byte, i)) * (worker_scales[r * tensors + t] * inv_n);
      y[i] = sum + y[i];
    }
    scales[t] = compress(y, c, bits.data() + byte);
    at += c;
    byte += c / 8;
  }
}

void CompressedAllReduce::run(const std::vector<std::span<float>>& tensors, std::span<float> worker_error, std::span<float> server_error) {
  ZERO_CHECK(tensors.size() == sizes_.size() && worker_error.size() == worker_error_size() && server_error.size() == server_error_size(),
             "compressed all-reduce of ", tensors.size(), " tensors, errors ", worker_error.size(), " and ", server_error.size());
  for (std::size_t t = 0; t < tensors.size(); ++t) ZERO_CHECK(tensors[t].size() == sizes_[t], "tensor ", t, " has ", tensors[t].size(), " elements");
  const std::size_t n = static_cast<std::size_t>(ranks_), count = sizes_.size();
  // Phase 1: the workers' bits to their servers, the workers' scales to everyone.
  std::vector<std::uint8_t> send(n * block_), recv(n * block_);
  std::vector<float> scales(count), all_scales(n * count);
  compress_workers(tensors, worker_error, send, scales);
  exchange(send, recv);
  world_.all_gather_bytes(scales.data(), count * sizeof(float), all_scales.data());
  // This rank serves its chunk of every tensor; phase 2: the servers' bits and scales to everyone.
  std::vector<std::uint8_t> bits(block_), all_bits(n * block_);
  compress_servers(recv, all_scales, server_error, bits, scales);
  world_.all_gather_bytes(bits.data(), block_, all_bits.data());
  world_.all_gather_bytes(scales.data(), count * sizeof(float), all_scales.data());
  std::size_t byte = 0;
  for (std::size_t t = 0; t < count; ++t) {
    const std::size_t c = padded_[t] / n;
    for (std::size_t i = 0; i < sizes_[t]; ++i) {
      const std::size_t j = i / c;
      tensors[t][i] = all_scales[j * count + t] * sign_of(bit_at(all_bits.data() + j * block_ + byte, i % c));
    }
    byte += c / 8;
  }
}

}  // namespace zero
