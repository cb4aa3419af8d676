#include "common/task_queue.h"

#include "common/error.h"

namespace zero {

TaskQueue::TaskQueue() : thread_([this] { run(); }) {}

TaskQueue::~TaskQueue() { stop(); }

void TaskQueue::run() {
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();  // an exception is stored in the task's future
  }
}

std::shared_future<void> TaskQueue::push(std::function<void()> task) {
  std::packaged_task<void()> t(std::move(task));
  auto f = t.get_future().share();
  {
    std::lock_guard lock(mu_);
    ZERO_CHECK(!stopping_, "task pushed after its queue stopped");
    queue_.push_back(std::move(t));
  }
  cv_.notify_one();
  return f;
}

void TaskQueue::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

}  // namespace zero
