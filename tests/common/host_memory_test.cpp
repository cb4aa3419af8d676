// The host's available memory (MemAvailable, cgroup v1 and v2 limits) read from a fake root, and
// the planner's host check: its arithmetic and the numbers in its message.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/error_of.h"
#include "common/host_memory.h"
#include "planner/advisor.h"
#include "planner/host_fit.h"

namespace zero {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

class FakeHost : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::path(::testing::TempDir()) / cat("zero_host_test_", ::getpid(), "_", info->name());
    fs::remove_all(root_);
    put("proc/meminfo", "MemTotal:       32000000 kB\nMemFree:         1000 kB\nMemAvailable:   20000000 kB\nCached: 5 kB\n");
  }
  void TearDown() override { fs::remove_all(root_); }
  void put(const std::string& path, const std::string& text) const {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }
  std::string root() const { return root_.string(); }
  fs::path root_;
};

TEST_F(FakeHost, MemAvailableWithoutACgroup) {
  const HostMemory m = host_memory(root());
  EXPECT_EQ(m.available, 20000000ull * 1024);
  EXPECT_NE(m.source.find("MemAvailable in " + root() + "/proc/meminfo; no memory cgroup"), std::string::npos) << m.source;
}

TEST_F(FakeHost, CgroupV2LimitBindsFirstAtAnyLevel) {
  put("proc/self/cgroup", "0::/slurm/job7/step0\n");
  put("sys/fs/cgroup/slurm/job7/step0/memory.max", "max\n");  // no limit on the step itself
  put("sys/fs/cgroup/slurm/job7/memory.max", "8589934592\n");  // 8 GiB on the job
  put("sys/fs/cgroup/slurm/job7/memory.current", "3221225472\n");
  put("sys/fs/cgroup/slurm/job7/memory.stat", "anon 100\ninactive_file 1073741824\nactive_file 5\n");
  const HostMemory m = host_memory(root());
  EXPECT_EQ(m.available, 8589934592ull - (3221225472ull - 1073741824ull));  // 6 GiB: the cache is reclaimable
  EXPECT_NE(m.source.find(root() + "/sys/fs/cgroup/slurm/job7/memory.max (8589934592 bytes)"), std::string::npos) << m.source;
}

TEST_F(FakeHost, CgroupV1LimitAndItsNoLimitValue) {
  put("proc/self/cgroup", "9:cpu,cpuacct:/x\n4:memory:/docker/abc\n");
  put("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "no limit"
  EXPECT_EQ(host_memory(root()).available, 20000000ull * 1024);
  put("sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "4294967296\n");
  put("sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes", "1073741824\n");
  put("sys/fs/cgroup/memory/docker/abc/memory.stat", "cache 9\ntotal_inactive_file 536870912\n");
  EXPECT_EQ(host_memory(root()).available, 4294967296ull - 536870912ull);
}

TEST_F(FakeHost, NoMemAvailableIsAnError) {
  put("proc/meminfo", "MemTotal: 1000 kB\nMemFree: 10 kB\n");
  EXPECT_NE(error_of([&] { host_memory(root()); }).find("has no MemAvailable line"), std::string::npos);
}

PlanInput small_gpt(int micro_batch) {
  PlanInput in;
  GptShape shape;
  shape.vocab_size = 256, shape.seq_len = 64, shape.channels = 128, shape.layers = 4, shape.heads = 4;
  in.model = describe_gpt(shape);
  in.micro_batch = micro_batch;
  in.settings.stage = 1;
  in.comm_scratch = false;
  return in;
}

TEST(HostFit, NeedIsEveryRankOnTheHostWithTheMarginAndTheData) {
  const Plan p = plan(small_gpt(64));
  const HostNeed cpu = host_need(p, true, 3, 1000, 10);
  const std::uint64_t planned = p.device.total() + p.host.total();
  EXPECT_EQ(cpu.planned_per_rank(), planned);
  EXPECT_EQ(cpu.margin_per_rank, kRankBaseBytes + static_cast<std::uint64_t>(0.10 * static_cast<double>(planned)));
  EXPECT_EQ(cpu.total(), 3 * (planned + cpu.margin_per_rank) + 1000 + 3 * 10);
  const HostNeed gpu = host_need(p, false, 3, 0, 0);  // the device tier is not host memory on a GPU
  EXPECT_EQ(gpu.planned_per_rank(), p.host.total());
}

TEST(HostFit, RefusalGivesExactBytesAndWhatWouldFit) {
  const PlanInput in = small_gpt(1500);
  const std::uint64_t need = host_need(plan(in), true, 2, 0, 0).total();
  const HostMemory short_by_one{need - 1, "test memory"};
  const std::string msg = error_of([&] { check_host_fit(in, true, 2, 0, 0, short_by_one); });
  EXPECT_NE(msg.find("[train] this run needs "), std::string::npos) << msg;
  // One byte apart, and both figures say so.
  EXPECT_NE(msg.find(cat("needs ", grouped(need), " bytes")), std::string::npos) << msg;
  EXPECT_NE(msg.find(cat("has ", grouped(need - 1), " bytes")), std::string::npos) << msg;
  EXPECT_NE(msg.find("(test memory)"), std::string::npos);
  EXPECT_NE(msg.find("Needed: 2 ranks on this host x"), std::string::npos);
  EXPECT_NE(msg.find("Nothing was allocated"), std::string::npos);
  EXPECT_NE(msg.find("micro-batch 750 with gradient_accumulation_steps 2 (the same global batch) fits at stage 1"), std::string::npos) << msg;
  EXPECT_THROW(check_host_fit(in, true, 2, 0, 0, short_by_one), OutOfMemoryError);
  EXPECT_NO_THROW(check_host_fit(in, true, 2, 0, 0, HostMemory{need, "exactly enough"}));
}

}  // namespace
}  // namespace zero
