#include "partition/init.h"

#include <cmath>
#include <numbers>

#include "common/error.h"

namespace zero {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t hash_name(const std::string& name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

double counter_uniform(std::uint64_t key, std::uint64_t counter) {
  const std::uint64_t bits = splitmix64(splitmix64(key) ^ counter);
  return static_cast<double>(bits >> 11) * 0x1.0p-53;  // 53 random bits
}

void init_values(const ParamSpec& spec, std::uint64_t seed, std::size_t first, std::span<float> out) {
  const std::uint64_t key = splitmix64(seed) ^ hash_name(spec.name);
  switch (spec.init.kind) {
    case InitKind::kZeros:
      for (float& x : out) x = 0.0f;
      return;
    case InitKind::kOnes:
      for (float& x : out) x = 1.0f;
      return;
    case InitKind::kUniform:
      for (std::size_t i = 0; i < out.size(); ++i) {
        const double u = counter_uniform(key, first + i);
        out[i] = static_cast<float>((2.0 * u - 1.0) * spec.init.scale);
      }
      return;
    case InitKind::kNormal:
      // Box-Muller on two uniforms drawn from counters 2i and 2i+1 of this element.
      for (std::size_t i = 0; i < out.size(); ++i) {
        const std::uint64_t c = 2 * (first + i);
        const double u1 = 1.0 - counter_uniform(key, c);  // (0, 1]
        const double u2 = counter_uniform(key, c + 1);
        const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
        out[i] = static_cast<float>(z * spec.init.scale);
      }
      return;
  }
}

void init_segments(const UnitPlace& unit, const std::vector<Segment>& segments, std::uint64_t seed, float* out) {
  for (const Segment& s : segments) {
    std::span<float> dst(out + s.offset, s.numel);
    if (s.param < 0) {
      for (float& x : dst) x = 0.0f;
    } else {
      init_values(unit.params.at(s.param).spec, seed, s.param_offset, dst);
    }
  }
}

}  // namespace zero
