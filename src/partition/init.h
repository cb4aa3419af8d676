// Counter-based initialisation: an element's initial value is a pure function of the seed, the
// parameter's name and the element's index. Whoever holds an element, whatever the world size,
// computes the same value, so a sharded initialisation equals an unsharded one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "partition/layout.h"

namespace zero {

// out[i] = initial value of element (first + i) of parameter `spec`.
void init_values(const ParamSpec& spec, std::uint64_t seed, std::size_t first, std::span<float> out);

// Fills `out`, the elements of unit `unit` described by `segments` (from FlatLayout), with their
// initial values; padding becomes zero.
void init_segments(const UnitPlace& unit, const std::vector<Segment>& segments, std::uint64_t seed, float* out);

// A counter-based uniform in [0, 1): for synthetic data and anything else that must not depend
// on who draws it.
double counter_uniform(std::uint64_t key, std::uint64_t counter);
std::uint64_t hash_name(const std::string& name);

}  // namespace zero
