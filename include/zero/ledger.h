// The memory ledger: every byte of model state is allocated through it.
//
// A *tier* is where memory lives: `device` is where compute reads parameters (on a CPU-only
// build, host RAM accounted on its own), `host` holds offloaded state. A *category* says what
// the bytes are for. The ledger keeps, per tier and category, the bytes live now and the peak;
// and per tier the peak of the total (which is not the sum of the per-category peaks).
// One ledger per rank: the numbers it reports are that rank's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>

namespace zero {

// `nvme` is the disk tier (ZeRO-Infinity): the bytes of swap files, which hold optimizer state
// that host memory streams through its buffers.
enum class Tier : int { kDevice = 0, kHost = 1, kNvme = 2 };
inline constexpr int kNumTiers = 3;

enum class Category : int {
  kParameters = 0,          // this rank's parameters (full or shard)
  kGradients = 1,           // gradients (full, transient per unit, or shard)
  kOptimizerState = 2,      // Adam's first and second moments (and fp32 masters, later)
  kCommBuffers = 3,         // scratch of collectives
  kGatheredParameters = 4,  // stage 3: whole units gathered for compute, freed after
  kActivations = 5,         // activations and compute scratch
  kOther = 6,
};
inline constexpr int kNumCategories = 7;

const char* tier_name(Tier t);
const char* category_name(Category c);  // snake_case, as in --json output

struct TierUsage {
  std::array<std::uint64_t, kNumCategories> current{};  // bytes live now
  std::array<std::uint64_t, kNumCategories> peak{};     // max of current, per category
  std::uint64_t total_current = 0;
  std::uint64_t total_peak = 0;  // max over time of the sum over categories
  // current, by category, at the (first) moment the total reached total_peak: what the peak is made of
  std::array<std::uint64_t, kNumCategories> at_peak{};
};

class Ledger {
 public:
  Ledger() = default;
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // A tier with a capacity refuses allocations that would exceed it (OutOfMemoryError).
  void set_capacity(Tier tier, std::optional<std::uint64_t> bytes);
  std::optional<std::uint64_t> capacity(Tier tier) const;

  // Records `bytes` as allocated/freed; throws OutOfMemoryError naming `what` past capacity.
  void on_alloc(Tier tier, Category cat, std::uint64_t bytes, const std::string& what);
  void on_free(Tier tier, Category cat, std::uint64_t bytes);

  TierUsage usage(Tier tier) const;
  std::uint64_t current(Tier tier, Category cat) const;
  std::uint64_t peak(Tier tier, Category cat) const;

  // Forgets the peaks (sets them to what is live now), so a phase can be measured alone.
  void reset_peaks();

 private:
  mutable std::mutex mu_;
  std::array<TierUsage, kNumTiers> tiers_{};
  std::array<std::optional<std::uint64_t>, kNumTiers> capacity_{};
};

// An owned, zero-initialised, 64-byte-aligned array of floats accounted in a ledger.
// Moving transfers ownership; destruction (or reset()) returns the bytes to the ledger.
class Buffer {
 public:
  Buffer() = default;
  // Zero-filled unless `zeroed` is false (scratch that is written before it is read).
  Buffer(Ledger& ledger, Tier tier, Category cat, std::size_t numel, const std::string& what, bool zeroed = true);
  ~Buffer() { reset(); }
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void reset();
  // Page-locks the memory (pinned host memory, for fast and asynchronous copies); false if the
  // system refuses (errno says why). Unlocked when freed.
  bool lock_pages();
  float* data() { return data_; }
  const float* data() const { return data_; }
  std::size_t size() const { return numel_; }
  bool empty() const { return data_ == nullptr; }
  std::span<float> span() { return {data_, numel_}; }
  std::span<const float> span() const { return {data_, numel_}; }

 private:
  Ledger* ledger_ = nullptr;
  Tier tier_ = Tier::kDevice;
  Category cat_ = Category::kOther;
  float* data_ = nullptr;
  std::size_t numel_ = 0;
  bool locked_ = false;
};

std::string format_bytes(std::uint64_t bytes);  // "12.3 MiB"
// `bytes` for a message that sets it against `other` ("needs X but has Y"): format_bytes, with the
// exact count added when the two would print alike ("37.58 MiB (39404544 bytes)").
std::string format_bytes_beside(std::uint64_t bytes, std::uint64_t other);

}  // namespace zero
