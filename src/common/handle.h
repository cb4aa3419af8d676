// Handle: the completion of asynchronous work (a collective, a device stream's event). It lives
// in common, below both the device and the communicator, so that neither includes the other.
#pragma once

#include <future>
#include <utility>

namespace zero {

// Completion of an asynchronous operation. wait() rethrows the operation's error, if any.
class Handle {
 public:
  Handle() = default;
  explicit Handle(std::shared_future<void> f) : f_(std::move(f)) {}
  void wait() const {
    if (f_.valid()) f_.get();
  }
  bool valid() const { return f_.valid(); }

 private:
  std::shared_future<void> f_;
};

}  // namespace zero
