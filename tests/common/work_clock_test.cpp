// The work clock (common/work_clock.h): off by default and per thread; spans do not nest (an
// inner span records nothing, so no moment counts twice); a Handle's wait is Work::kWait.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "common/handle.h"
#include "common/work_clock.h"

namespace zero {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void spin_for(std::chrono::milliseconds d) {
  const auto end = Clock::now() + d;
  while (Clock::now() < end) {
  }
}

TEST(WorkClock, OffRecordsNothing) {
  set_work_clock(false);
  const WorkSeconds before = work_seconds();
  {
    WorkSpan span(Work::kMatmul);
    spin_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ((work_seconds() - before)[Work::kMatmul], 0.0);
}

TEST(WorkClock, AnInnerSpanRecordsNothingAndTheOuterCoversBoth) {
  set_work_clock(true);
  const WorkSeconds before = work_seconds();
  const auto start = Clock::now();
  {
    WorkSpan outer(Work::kOptimizer);
    spin_for(std::chrono::milliseconds(3));
    {
      WorkSpan inner(Work::kMatmul);
      spin_for(std::chrono::milliseconds(3));
    }
  }
  const double elapsed = seconds_since(start);
  const WorkSeconds d = work_seconds() - before;
  set_work_clock(false);
  EXPECT_EQ(d[Work::kMatmul], 0.0);
  EXPECT_GE(d[Work::kOptimizer], 0.006);
  EXPECT_LE(d[Work::kOptimizer], elapsed);
  double total = 0;
  for (double s : d.seconds) total += s;
  EXPECT_LE(total, elapsed) << "no moment counted twice";
}

TEST(WorkClock, IsPerThread) {
  set_work_clock(true);
  const WorkSeconds before = work_seconds();
  std::thread other([] {
    EXPECT_FALSE(work_clock_on()) << "a new thread's clock starts off";
    set_work_clock(true);
    WorkSpan span(Work::kNorm);
    spin_for(std::chrono::milliseconds(3));
  });
  other.join();
  EXPECT_EQ((work_seconds() - before)[Work::kNorm], 0.0);
  set_work_clock(false);
}

TEST(WorkClock, AHandlesWaitIsWaiting) {
  std::promise<void> done;
  const Handle h(done.get_future().share());
  std::thread finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    done.set_value();
  });
  set_work_clock(true);
  const WorkSeconds before = work_seconds();
  const auto start = Clock::now();
  h.wait();
  const double elapsed = seconds_since(start);
  const WorkSeconds d = work_seconds() - before;
  set_work_clock(false);
  finisher.join();
  EXPECT_GT(d[Work::kWait], 0.0);
  EXPECT_LE(d[Work::kWait], elapsed);
  EXPECT_GE(d[Work::kWait], 0.5 * elapsed) << "the wait is most of the time wait() took";
}

}  // namespace
}  // namespace zero
