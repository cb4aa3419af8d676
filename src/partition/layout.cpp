#include "partition/layout.h"

#include <algorithm>
#include <set>

#include "common/error.h"

namespace zero {

std::int64_t ParamSpec::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

namespace {

// FNV-1a, enough to tell two model descriptions apart.
void hash_bytes(std::uint64_t& h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
}

void hash_string(std::uint64_t& h, const std::string& s) {
  hash_bytes(h, s.data(), s.size());
  hash_bytes(h, "\0", 1);
}

}  // namespace

FlatLayout::FlatLayout(std::vector<UnitSpec> units, int world_size, int shard_size)
    : world_size_(world_size), shard_size_(shard_size == 0 ? world_size : shard_size) {
  if (world_size < 1) throw ConfigError(cat("[partition] world size must be at least 1, not ", world_size));
  if (shard_size_ < 1 || world_size % shard_size_ != 0) {
    throw ConfigError(cat("[partition] a shard group of ", shard_size_, " ranks does not divide the world of ", world_size,
                          " ranks: use a divisor of the world size"));
  }
  if (units.empty()) throw ConfigError("[partition] the model has no units: declare at least one unit with parameters");
  const std::size_t n = static_cast<std::size_t>(world_size);
  std::set<std::string> names;
  fingerprint_ = 0xcbf29ce484222325ULL;
  std::size_t flat = 0;
  std::size_t shard = 0;
  for (std::size_t u = 0; u < units.size(); ++u) {
    UnitSpec& spec = units[u];
    if (spec.params.empty()) {
      throw ConfigError(cat("[partition] unit ", u, " ('", spec.name, "') declares no parameters: ",
                            "merge it into a neighbouring unit or give it parameters"));
    }
    UnitPlace place;
    place.name = spec.name;
    place.borrows = spec.borrows;
    hash_string(fingerprint_, spec.name);
    for (auto& p : spec.params) {
      if (p.name.empty()) throw ConfigError(cat("[partition] unit '", spec.name, "' has a parameter without a name"));
      if (!names.insert(p.name).second) throw ConfigError(cat("[partition] parameter name '", p.name, "' is used twice; names must be unique"));
      if (p.shape.empty()) throw ConfigError(cat("[partition] parameter '", p.name, "' has no shape"));
      for (auto d : p.shape)
        if (d <= 0) throw ConfigError(cat("[partition] parameter '", p.name, "' has a dimension of ", d, "; dimensions must be positive"));
      ParamPlace pp;
      pp.offset = place.numel;
      pp.numel = static_cast<std::size_t>(p.numel());
      hash_string(fingerprint_, p.name);
      hash_bytes(fingerprint_, p.shape.data(), p.shape.size() * sizeof(std::int64_t));
      hash_bytes(fingerprint_, &p.decay, sizeof p.decay);
      pp.spec = std::move(p);
      place.numel += pp.numel;
      place.params.push_back(std::move(pp));
    }
    place.padded = (place.numel + n - 1) / n * n;
    place.slice = place.padded / static_cast<std::size_t>(shard_size_);
    place.flat_offset = flat;
    place.shard_offset = shard;
    flat += place.padded;
    shard += place.slice;
    numel_ += place.numel;
    units_.push_back(std::move(place));
  }
  padded_numel_ = flat;

  grad_ready_after_.resize(units_.size());
  for (std::size_t u = 0; u < units_.size(); ++u) grad_ready_after_[u] = static_cast<int>(u);
  for (std::size_t u = 0; u < units_.size(); ++u) {
    for (int b : units_[u].borrows) {
      if (b < 0 || b >= num_units() || b == static_cast<int>(u)) {
        throw ConfigError(cat("[partition] unit '", units_[u].name, "' borrows unit ", b, ", which is not another unit of the model"));
      }
      grad_ready_after_[b] = std::min(grad_ready_after_[b], static_cast<int>(u));
      hash_bytes(fingerprint_, &b, sizeof b);
    }
  }
}

std::size_t FlatLayout::largest_unit() const {
  std::size_t m = 0;
  for (const auto& u : units_) m = std::max(m, u.padded);
  return m;
}

std::vector<int> FlatLayout::units_read_by(int u) const {
  std::vector<int> r{u};
  for (int b : units_.at(u).borrows) r.push_back(b);
  return r;
}

std::vector<Segment> FlatLayout::segments_in(int u, std::size_t begin, std::size_t end) const {
  const UnitPlace& unit = units_.at(u);
  std::vector<Segment> out;
  for (std::size_t i = 0; i < unit.params.size(); ++i) {
    const ParamPlace& p = unit.params[i];
    const std::size_t lo = std::max(begin, p.offset);
    const std::size_t hi = std::min(end, p.offset + p.numel);
    if (lo >= hi) continue;
    out.push_back({lo - begin, hi - lo, static_cast<int>(i), lo - p.offset, p.spec.decay});
  }
  const std::size_t pad_lo = std::max(begin, unit.numel);
  if (pad_lo < end) out.push_back({pad_lo - begin, end - pad_lo, -1, 0, false});
  return out;
}

std::vector<Segment> FlatLayout::slice_segments(int u, int rank) const {
  ZERO_CHECK(rank >= 0 && rank < shard_size_, "rank ", rank, " outside the shard group of ", shard_size_);
  const UnitPlace& unit = units_.at(u);
  const std::size_t begin = static_cast<std::size_t>(rank) * unit.slice;
  return segments_in(u, begin, begin + unit.slice);
}

std::vector<Segment> FlatLayout::unit_segments(int u) const { return segments_in(u, 0, units_.at(u).padded); }

}  // namespace zero
