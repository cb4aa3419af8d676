#include "partition/layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "common/error.h"
#include "partition/init.h"

namespace zero {
namespace {

ParamSpec param(std::string name, std::vector<std::int64_t> shape, bool decay = true) {
  return {std::move(name), std::move(shape), Init::normal(0.02f), decay};
}

std::vector<UnitSpec> three_units() {
  return {
      {"embed", {param("wte", {7, 3}), param("wpe", {2, 3})}, {}},  // 27 elements
      {"block", {param("w", {5, 5}), param("b", {5}, false)}, {}},  // 30 elements
      {"head", {param("ln", {2}, false)}, {0}},                     // 2 elements, borrows embed
  };
}

// Every element of every unit is owned by exactly one rank, and the slices tile the padded unit.
void expect_slices_tile_units(const FlatLayout& layout) {
  const int n = layout.world_size();
  for (int u = 0; u < layout.num_units(); ++u) {
    const UnitPlace& unit = layout.unit(u);
    ASSERT_EQ(unit.padded % n, 0u);
    ASSERT_GE(unit.padded, unit.numel);
    ASSERT_LT(unit.padded - unit.numel, static_cast<std::size_t>(n));  // at most N-1 padding elements
    std::vector<int> owner(unit.padded, -1);
    std::size_t param_elements = 0;
    for (int r = 0; r < n; ++r) {
      std::size_t covered = 0;
      for (const Segment& s : layout.slice_segments(u, r)) {
        EXPECT_EQ(s.offset, covered) << "segments are contiguous";
        covered += s.numel;
        for (std::size_t i = 0; i < s.numel; ++i) {
          const std::size_t e = r * unit.slice + s.offset + i;
          EXPECT_EQ(owner[e], -1);
          owner[e] = r;
          if (s.param >= 0) {
            const ParamPlace& p = unit.params[s.param];
            EXPECT_EQ(p.offset + s.param_offset + i, e) << "segment maps to its parameter's element";
            EXPECT_EQ(s.decay, p.spec.decay);
            ++param_elements;
          } else {
            EXPECT_GE(e, unit.numel) << "padding only after the parameters";
          }
        }
      }
      EXPECT_EQ(covered, unit.slice);
    }
    EXPECT_EQ(param_elements, unit.numel);
  }
}

TEST(FlatLayout, SizesNotDivisibleByWorld) {
  for (int n : {1, 2, 3, 4, 7}) {
    FlatLayout layout(three_units(), n);
    EXPECT_EQ(layout.numel(), 27u + 30u + 2u);
    expect_slices_tile_units(layout);
    std::size_t shard = 0;
    for (int u = 0; u < layout.num_units(); ++u) {
      EXPECT_EQ(layout.unit(u).shard_offset, shard);
      shard += layout.unit(u).slice;
    }
    EXPECT_EQ(layout.shard_numel(), shard);
    EXPECT_EQ(layout.shard_numel() * n, layout.padded_numel());
  }
}

TEST(FlatLayout, WorldThreeHasExpectedPadding) {
  FlatLayout layout(three_units(), 3);
  EXPECT_EQ(layout.unit(0).padded, 27u);
  EXPECT_EQ(layout.unit(1).padded, 30u);
  EXPECT_EQ(layout.unit(2).padded, 3u);
  EXPECT_EQ(layout.unit(2).slice, 1u);
  EXPECT_EQ(layout.unit(1).flat_offset, 27u);
  EXPECT_EQ(layout.unit(2).flat_offset, 57u);
  // Rank 2's slice of the head unit is pure padding.
  auto segs = layout.slice_segments(2, 2);
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(segs[0].param, -1);
}

TEST(FlatLayout, UnitSmallerThanWorld) {
  // The 2-element unit on 4 ranks: ranks 0 and 1 own one element each, ranks 2 and 3 padding.
  FlatLayout layout(three_units(), 4);
  const UnitPlace& head = layout.unit(2);
  EXPECT_EQ(head.padded, 4u);
  EXPECT_EQ(head.slice, 1u);
  EXPECT_EQ(layout.slice_segments(2, 1)[0].param, 0);
  EXPECT_EQ(layout.slice_segments(2, 1)[0].param_offset, 1u);
  EXPECT_EQ(layout.slice_segments(2, 3)[0].param, -1);
  expect_slices_tile_units(layout);
}

TEST(FlatLayout, SegmentsSplitAtParameterBoundaries) {
  FlatLayout layout(three_units(), 2);  // block: w 25 + b 5 = 30, slice 15
  auto r1 = layout.slice_segments(1, 1);
  ASSERT_EQ(r1.size(), 2u);
  EXPECT_EQ(r1[0].param, 0);
  EXPECT_EQ(r1[0].param_offset, 15u);
  EXPECT_EQ(r1[0].numel, 10u);
  EXPECT_TRUE(r1[0].decay);
  EXPECT_EQ(r1[1].param, 1);
  EXPECT_EQ(r1[1].numel, 5u);
  EXPECT_FALSE(r1[1].decay);
}

TEST(FlatLayout, TiedGradientIsReadyAfterItsLastReader) {
  FlatLayout layout(three_units(), 2);
  EXPECT_EQ(layout.gradient_ready_after(0), 0);
  EXPECT_EQ(layout.gradient_ready_after(1), 1);
  EXPECT_EQ(layout.gradient_ready_after(2), 2);
  EXPECT_EQ(layout.units_read_by(2), (std::vector<int>{2, 0}));
}

TEST(FlatLayout, FingerprintSeesShapesNotWorldSize) {
  auto units = three_units();
  EXPECT_EQ(FlatLayout(units, 2).fingerprint(), FlatLayout(units, 4).fingerprint());
  units[1].params[0].shape = {5, 6};
  EXPECT_NE(FlatLayout(units, 2).fingerprint(), FlatLayout(three_units(), 2).fingerprint());
}

TEST(FlatLayout, RejectsBadDescriptions) {
  auto expect_error = [](std::vector<UnitSpec> units, int n, const std::string& needle) {
    try {
      FlatLayout layout(std::move(units), n);
      FAIL() << "expected ConfigError containing '" << needle << "'";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("[partition]", 0), 0u) << e.what();
    }
  };
  auto units = three_units();
  units[1].params.clear();
  expect_error(units, 2, "declares no parameters");
  units = three_units();
  units[1].params[1].name = "w";
  expect_error(units, 2, "used twice");
  units = three_units();
  units[0].params[0].shape = {7, 0};
  expect_error(units, 2, "dimension of 0");
  units = three_units();
  units[2].borrows = {9};
  expect_error(units, 2, "borrows unit 9");
  expect_error(three_units(), 0, "world size");
  expect_error({}, 2, "no units");
}

TEST(Init, ShardedEqualsUnsharded) {
  // Each rank initialising only its slice reproduces the unsharded initialisation exactly.
  auto units = three_units();
  units[1].params[1].init = Init::uniform(0.5f);
  FlatLayout whole(units, 1);
  for (int n : {2, 3, 4}) {
    FlatLayout layout(units, n);
    for (int u = 0; u < layout.num_units(); ++u) {
      std::vector<float> full(whole.unit(u).padded);
      init_segments(whole.unit(u), whole.unit_segments(u), 42, full.data());
      for (int r = 0; r < n; ++r) {
        std::vector<float> slice(layout.unit(u).slice);
        init_segments(layout.unit(u), layout.slice_segments(u, r), 42, slice.data());
        for (std::size_t i = 0; i < slice.size(); ++i) {
          const std::size_t e = r * layout.unit(u).slice + i;
          const float expected = e < full.size() ? full[e] : 0.0f;
          ASSERT_EQ(slice[i], expected) << "unit " << u << " rank " << r << " element " << e;
        }
      }
    }
  }
}

TEST(Init, DependsOnSeedAndNameAndHasTheAskedScale) {
  ParamSpec a = param("a", {20000});
  ParamSpec b = param("b", {20000});
  std::vector<float> xa(20000), xb(20000), xa2(20000);
  init_values(a, 1, 0, xa);
  init_values(b, 1, 0, xb);
  init_values(a, 2, 0, xa2);
  EXPECT_NE(xa, xb);
  EXPECT_NE(xa, xa2);
  double mean = std::accumulate(xa.begin(), xa.end(), 0.0) / xa.size();
  double var = 0;
  for (float x : xa) var += (x - mean) * (x - mean);
  var /= xa.size();
  EXPECT_NEAR(mean, 0.0, 0.001);
  EXPECT_NEAR(std::sqrt(var), 0.02, 0.001);
}

}  // namespace
}  // namespace zero
