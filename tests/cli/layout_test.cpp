// The start-up layout line and its warnings, on places written out by hand (hosts, binding,
// threads), and gather_places over thread ranks against each rank's own view.
#include "cli/layout.h"

#include <gtest/gtest.h>

#include <thread>

#include "comm/thread_world.h"
#include "common/error.h"

namespace zero::cli {
namespace {

std::vector<int> range(int first, int count) {
  std::vector<int> v;
  for (int i = 0; i < count; ++i) v.push_back(first + i);
  return v;
}

// A rank on `host`, whose node index is its first letter's ('a': 0).
RankPlace place(const std::string& host, int local, int threads, std::vector<int> cpus) {
  return {host, host[0] - 'a', local, threads, std::move(cpus)};
}

bool has_warning(const std::vector<std::string>& w, const std::string& part) {
  for (const std::string& s : w) {
    if (s.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(Layout, CpuListWritesRunsAsTasksetDoes) {
  EXPECT_EQ(cpu_list({}), "none");
  EXPECT_EQ(cpu_list({5}), "5");
  EXPECT_EQ(cpu_list({0, 1}), "0,1");
  EXPECT_EQ(cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10,11");
  EXPECT_EQ(cpu_list({0, 1, 2, 3, 8, 10, 11, 12}), "0-3,8,10-12");
}

TEST(Layout, TwoBoundRanksOnOneHost) {
  const std::vector<RankPlace> p = {place("a", 0, 1, {0}), place("a", 1, 1, {1})};
  const std::string text = describe_layout(p, "mpi");
  EXPECT_NE(text.find("layout: 2 ranks (mpi) on 1 host, 2 ranks per host, 1 OpenMP thread per rank, each bound to 1 core\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  host a: ranks 0,1, cpus 0,1; rank 0 on 0; rank 1 on 1\n"), std::string::npos) << text;
  EXPECT_TRUE(layout_warnings(p).empty());
}

TEST(Layout, UnboundRanksOversubscribingTheirHost) {
  const std::vector<RankPlace> p = {place("a", 0, 1, range(0, 2)), place("a", 1, 1, range(0, 2)), place("a", 2, 1, range(0, 2)),
                                    place("a", 3, 1, range(0, 2))};
  const std::string text = describe_layout(p, "mpi");
  EXPECT_NE(text.find("4 ranks per host, 1 OpenMP thread per rank, not bound (each may run on its host's 2 cores)"), std::string::npos) << text;
  const auto w = layout_warnings(p);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_TRUE(has_warning(w, "host a runs 4 ranks with 4 threads in all on 2 cores")) << w[0];
}

TEST(Layout, ThreadsBeyondTheHostsCores) {
  const std::vector<RankPlace> p = {place("a", 0, 3, range(0, 4)), place("a", 1, 3, range(0, 4))};
  EXPECT_TRUE(has_warning(layout_warnings(p), "runs 2 ranks with 6 threads in all on 4 cores"));
  const std::vector<RankPlace> fits = {place("a", 0, 2, range(0, 4)), place("a", 1, 2, range(0, 4))};
  EXPECT_TRUE(layout_warnings(fits).empty());
}

TEST(Layout, BoundRanksSharingCoresOrShortOfThem) {
  const std::vector<RankPlace> p = {place("a", 0, 1, {0, 1}), place("a", 1, 1, {1, 2}), place("a", 2, 4, {3}), place("a", 3, 1, range(0, 8))};
  const auto w = layout_warnings(p);
  EXPECT_TRUE(has_warning(w, "ranks 0 and 1 on a are bound to the same cores (1)"));
  EXPECT_TRUE(has_warning(w, "rank 2 on a runs 4 OpenMP threads but is bound to 1 core (3)"));
  EXPECT_FALSE(has_warning(w, "ranks 0 and 3"));  // rank 3 is not bound: it runs on the whole host
  EXPECT_NE(describe_layout(p, "mpi").find("some bound"), std::string::npos);
}

TEST(Layout, HostsInRankOrderUnevenAndManyHosts) {
  std::vector<RankPlace> p = {place("b", 0, 2, range(0, 2)), place("a", 0, 2, range(0, 2)), place("b", 1, 2, range(2, 2))};
  const std::string text = describe_layout(p, "mpi");
  EXPECT_NE(text.find("on 2 hosts, 1 to 2 ranks per host (uneven), 2 OpenMP threads per rank, some bound (2 cores each)"), std::string::npos) << text;
  EXPECT_LT(text.find("host b: ranks 0,2"), text.find("host a: rank 1")) << text;
  p.clear();
  for (int h = 0; h < 10; ++h) p.push_back({cat("h", h), h, 0, 1, {0}});
  const std::string many = describe_layout(p, "mpi");
  EXPECT_NE(many.find("on 10 hosts, 1 rank per host"), std::string::npos) << many;
  EXPECT_NE(many.find("  ... and 2 more hosts\n"), std::string::npos) << many;
  EXPECT_EQ(many.find("host h8"), std::string::npos) << many;
}

TEST(Layout, NodesSharingAHostNameAreTold) {
  const std::vector<RankPlace> p = {{"box", 0, 0, 1, {0}}, {"box", 1, 0, 1, {0}}};
  const std::string text = describe_layout(p, "mpi");
  EXPECT_NE(text.find("on 2 hosts, 1 rank per host"), std::string::npos) << text;
  EXPECT_NE(text.find("  host box (node 0): rank 0, cpus 0\n  host box (node 1): rank 1, cpus 0\n"), std::string::npos) << text;
  EXPECT_TRUE(layout_warnings(p).empty());  // the same CPU numbers on two nodes are not shared
}

TEST(Layout, GatherOverThreadRanksIsEachRanksOwnView) {
  for (int n : {1, 2, 3}) {
    ThreadWorld world(n);
    std::vector<std::vector<RankPlace>> seen(n);
    std::vector<RankPlace> own(n);
    world.run([&](int r) {
      auto comm = world.communicator(r);
      own[r] = this_rank_place(*comm);
      seen[r] = gather_places(*comm);
    });
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(seen[r].size(), static_cast<std::size_t>(n));
      for (int q = 0; q < n; ++q) EXPECT_EQ(seen[r][q], own[q]) << "rank " << r << " sees rank " << q;
      EXPECT_EQ(own[r].local_rank, r);
      EXPECT_FALSE(own[r].cpus.empty());
    }
  }
}

}  // namespace
}  // namespace zero::cli
