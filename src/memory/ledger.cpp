#include "memory/ledger.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "common/error.h"

namespace zero {

const char* tier_name(Tier t) {
  switch (t) {
    case Tier::kDevice: return "device";
    case Tier::kHost: return "host";
    case Tier::kNvme: return "nvme";
  }
  return "?";
}

const char* category_name(Category c) {
  switch (c) {
    case Category::kParameters: return "parameters";
    case Category::kGradients: return "gradients";
    case Category::kOptimizerState: return "optimizer_state";
    case Category::kCommBuffers: return "comm_buffers";
    case Category::kGatheredParameters: return "gathered_parameters";
    case Category::kActivations: return "activations";
    case Category::kOther: return "other";
  }
  return "?";
}

std::string format_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

std::string format_bytes_beside(std::uint64_t bytes, std::uint64_t other) {
  std::string text = format_bytes(bytes);
  if (bytes != other && text == format_bytes(other)) text += cat(" (", bytes, " bytes)");
  return text;
}

void Ledger::set_capacity(Tier tier, std::optional<std::uint64_t> bytes) {
  std::lock_guard lock(mu_);
  capacity_[static_cast<int>(tier)] = bytes;
}

std::optional<std::uint64_t> Ledger::capacity(Tier tier) const {
  std::lock_guard lock(mu_);
  return capacity_[static_cast<int>(tier)];
}

void Ledger::on_alloc(Tier tier, Category category, std::uint64_t bytes, const std::string& what) {
  std::lock_guard lock(mu_);
  TierUsage& t = tiers_[static_cast<int>(tier)];
  const auto& cap = capacity_[static_cast<int>(tier)];
  if (cap && t.total_current + bytes > *cap) {
    throw OutOfMemoryError(cat("[memory] cannot allocate ", format_bytes(bytes), " for ", what, " (",
                               category_name(category), ") on the ", tier_name(tier), " tier: ",
                               format_bytes(t.total_current), " of its ", format_bytes(*cap),
                               " capacity are in use. Use a higher ZeRO stage, offload, fewer "
                               "parameters or a larger capacity."));
  }
  const int c = static_cast<int>(category);
  t.current[c] += bytes;
  t.total_current += bytes;
  if (t.current[c] > t.peak[c]) t.peak[c] = t.current[c];
  if (t.total_current > t.total_peak) {
    t.total_peak = t.total_current;
    t.at_peak = t.current;
  }
}

void Ledger::on_free(Tier tier, Category category, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  TierUsage& t = tiers_[static_cast<int>(tier)];
  const int c = static_cast<int>(category);
  ZERO_CHECK(t.current[c] >= bytes, "freeing more ", category_name(category), " bytes than allocated");
  t.current[c] -= bytes;
  t.total_current -= bytes;
}

TierUsage Ledger::usage(Tier tier) const {
  std::lock_guard lock(mu_);
  return tiers_[static_cast<int>(tier)];
}

std::uint64_t Ledger::current(Tier tier, Category cat) const {
  return usage(tier).current[static_cast<int>(cat)];
}

std::uint64_t Ledger::peak(Tier tier, Category cat) const {
  return usage(tier).peak[static_cast<int>(cat)];
}

void Ledger::reset_peaks() {
  std::lock_guard lock(mu_);
  for (TierUsage& t : tiers_) {
    t.peak = t.current;
    t.total_peak = t.total_current;
    t.at_peak = t.current;
  }
}

Buffer::Buffer(Ledger& ledger, Tier tier, Category category, std::size_t numel, const std::string& what, bool zeroed)
    : ledger_(&ledger), tier_(tier), cat_(category), numel_(numel) {
  if (numel == 0) return;
  const std::size_t bytes = numel * sizeof(float);
  ledger.on_alloc(tier, category, bytes, what);
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  data_ = static_cast<float*>(std::aligned_alloc(64, rounded));
  if (data_ == nullptr) {
    ledger.on_free(tier, category, bytes);
    throw OutOfMemoryError(cat("[memory] the system refused ", format_bytes(bytes), " for ", what));
  }
  if (zeroed) std::memset(data_, 0, rounded);
}

Buffer::Buffer(Buffer&& other) noexcept
    : ledger_(other.ledger_), tier_(other.tier_), cat_(other.cat_), data_(other.data_), numel_(other.numel_), locked_(other.locked_) {
  other.data_ = nullptr;
  other.numel_ = 0;
  other.locked_ = false;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    ledger_ = other.ledger_;
    tier_ = other.tier_;
    cat_ = other.cat_;
    data_ = std::exchange(other.data_, nullptr);
    numel_ = std::exchange(other.numel_, 0);
    locked_ = std::exchange(other.locked_, false);
  }
  return *this;
}

bool Buffer::lock_pages() {
  if (data_ == nullptr || locked_) return true;
  locked_ = mlock(data_, numel_ * sizeof(float)) == 0;
  return locked_;
}

void Buffer::reset() {
  if (data_ != nullptr) {
    if (locked_) munlock(data_, numel_ * sizeof(float));
    locked_ = false;
    std::free(data_);
    ledger_->on_free(tier_, cat_, numel_ * sizeof(float));
  }
  data_ = nullptr;
  numel_ = 0;
}

}  // namespace zero
