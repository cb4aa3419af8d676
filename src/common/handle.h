// Handle: the completion of asynchronous work (a collective, a device stream's event). It lives
// in common, below both the device and the communicator, so that neither includes the other.
#pragma once

#include <atomic>
#include <future>
#include <utility>

#include "common/work_clock.h"

namespace zero {

// How many threads of this process are blocked in Handle::wait now. A transport may poll its
// network without sleeping while one is: that thread's core has nothing else to do.
inline std::atomic<int> g_threads_waiting{0};

// Completion of an asynchronous operation. wait() rethrows the operation's error, if any; the
// time it blocks is the waiting thread's Work::kWait (work_clock.h).
class Handle {
 public:
  Handle() = default;
  explicit Handle(std::shared_future<void> f) : f_(std::move(f)) {}
  void wait() const {
    if (!f_.valid()) return;
    WorkSpan span(Work::kWait);
    struct Waiting {
      Waiting() { ++g_threads_waiting; }
      ~Waiting() { --g_threads_waiting; }
    } waiting;
    f_.get();
  }
  bool valid() const { return f_.valid(); }

 private:
  std::shared_future<void> f_;
};

}  // namespace zero
