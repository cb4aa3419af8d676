// The task queue (the CPU stand-in for a device stream): tasks run one at a time in push order,
// a task's exception reaches its future, stop() and the destructor drain what is queued, and a
// push after stop() is refused. The state the tasks touch is plain (not atomic) on purpose: under
// scripts/sanitize.sh's ThreadSanitizer build, a missing happens-before between a task and the
// thread that waits on its future is reported as a race.
#include <gtest/gtest.h>

#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/task_queue.h"

namespace zero {
namespace {

TEST(TaskQueue, RunsTasksOneAtATimeInPushOrder) {
  std::vector<int> order;  // written only by the queue's thread
  std::vector<std::shared_future<void>> done;
  {
    TaskQueue queue;
    for (int i = 0; i < 200; ++i) done.push_back(queue.push([&order, i] { order.push_back(i); }));
    done.back().get();
    ASSERT_EQ(order.size(), 200u);  // every earlier task ran before the last one completed
  }
  for (int i = 0; i < 200; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
}

TEST(TaskQueue, AnExceptionReachesItsFutureAndLaterTasksStillRun) {
  TaskQueue queue;
  int after = 0;
  auto failing = queue.push([] { throw std::runtime_error("task failed on purpose"); });
  auto next = queue.push([&after] { after = 7; });
  try {
    failing.get();
    FAIL() << "expected the task's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "task failed on purpose");
  }
  next.get();
  EXPECT_EQ(after, 7);
}

TEST(TaskQueue, StopAndTheDestructorRunWhatIsQueued) {
  int ran = 0;
  {
    TaskQueue queue;
    std::promise<void> gate;
    auto opened = gate.get_future().share();
    queue.push([opened] { opened.wait(); });  // holds the queue so the next ones stay queued
    for (int i = 0; i < 50; ++i) queue.push([&ran] { ++ran; });
    gate.set_value();
  }  // the destructor stops, drains and joins
  EXPECT_EQ(ran, 50);

  TaskQueue stopped;
  int before = 0;
  stopped.push([&before] { before = 1; });
  stopped.stop();
  EXPECT_EQ(before, 1);
  EXPECT_THROW(stopped.push([] {}), std::logic_error);  // a bug in the caller, not a hang
  stopped.stop();  // stopping twice is harmless
}

TEST(TaskQueue, PushesFromManyThreadsEachRunOnceAndATaskMayWaitOnAnotherQueue) {
  TaskQueue copies;
  TaskQueue compute;
  constexpr int kThreads = 4;
  constexpr int kTasks = 100;
  std::vector<int> hits(kThreads * kTasks, 0);
  std::vector<std::thread> pushers;
  std::vector<std::vector<std::shared_future<void>>> futures(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    pushers.emplace_back([&, t] {
      for (int i = 0; i < kTasks; ++i) {
        const std::size_t slot = static_cast<std::size_t>(t * kTasks + i);
        auto copied = copies.push([&hits, slot] { hits[slot] = 1; });
        // The compute task waits on the copy pushed before it (no cycle), then reads its result.
        futures[static_cast<std::size_t>(t)].push_back(compute.push([&hits, slot, copied] {
          copied.get();
          hits[slot] += 1;
        }));
      }
    });
  }
  for (auto& p : pushers) p.join();
  for (auto& per_thread : futures)
    for (auto& f : per_thread) f.get();
  for (int h : hits) EXPECT_EQ(h, 2);
}

}  // namespace
}  // namespace zero
