// A thread that runs tasks one at a time in the order they were pushed: the CPU stand-in for a
// device stream. The communicator runs its collectives on one; offload runs host<->device
// copies on one and the CPU optimizer on another. A task may wait on another queue's futures,
// as long as what it waits for was pushed earlier (then no cycle can form).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace zero {

class TaskQueue {
 public:
  TaskQueue();
  ~TaskQueue();  // runs what is queued, then joins
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  // Queues `task`; the future completes when it has run, carrying its exception if it threw.
  std::shared_future<void> push(std::function<void()> task);
  // Runs what is queued, then stops the thread; later pushes are an error.
  void stop();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace zero
