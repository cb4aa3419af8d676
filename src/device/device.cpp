#include "device/device.h"

#include <exception>
#include <future>

#include "common/error.h"
#include "common/task_queue.h"

namespace zero {

DeviceSpan DeviceSpan::sub(std::size_t offset, std::size_t n) const {
  ZERO_CHECK(offset <= n_ && n <= n_ - offset, "span [", offset, ", +", n, ") outside a span of ", n_);
  return {p_ == nullptr ? nullptr : static_cast<char*>(p_) + offset * dtype_bytes(dtype_), n, tier_, dtype_};
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : device_(o.device_), category_(o.category_), span_(o.span_), locked_(o.locked_) {
  o.device_ = nullptr;
  o.span_ = {};
  o.locked_ = false;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = o.device_;
    category_ = o.category_;
    span_ = o.span_;
    locked_ = o.locked_;
    o.device_ = nullptr;
    o.span_ = {};
    o.locked_ = false;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (device_ != nullptr) device_->release(*this);
  device_ = nullptr;
  span_ = {};
  locked_ = false;
}

Device::Device(Ledger& ledger, std::unique_ptr<Stream> compute, std::unique_ptr<Stream> copies, std::unique_ptr<Stream> host)
    : ledger_(ledger), compute_(std::move(compute)), copies_(std::move(copies)), host_(std::move(host)) {}

Device::~Device() = default;

DeviceBuffer Device::alloc(Tier tier, Category category, std::size_t numel, const std::string& what, Dtype dtype, bool zeroed) {
  DeviceBuffer b;
  if (numel == 0) return b;
  const std::size_t bytes = numel * dtype_bytes(dtype);
  ledger_.on_alloc(tier, category, bytes, what);
  void* p = allocate(tier, bytes, zeroed);
  if (p == nullptr && computes()) {
    ledger_.on_free(tier, category, bytes);
    throw OutOfMemoryError(cat("[memory] the system refused ", format_bytes(bytes), " of ", tier_name(tier), " memory for ", what));
  }
  b.device_ = this;
  b.category_ = category;
  b.span_ = DeviceSpan(p, numel, tier, dtype);
  return b;
}

void Device::copy(Stream& s, DeviceSpan dst, DeviceSpan src) {
  ZERO_CHECK(dst.size() == src.size() && dst.dtype() == src.dtype(), "copy of ", src.size(), " ", dtype_label(src.dtype()),
             " elements into ", dst.size(), " ", dtype_label(dst.dtype()));
  if (dst.tier() == Tier::kHost && src.tier() == Tier::kDevice) to_host_ += src.bytes();
  if (dst.tier() == Tier::kDevice && src.tier() == Tier::kHost) to_device_ += src.bytes();
  do_copy(s, dst, src);
}

bool Device::pin(DeviceBuffer& b) {
  if (b.empty() || b.locked_) return true;
  b.locked_ = lock(b.tier(), raw(b.span_), b.span_.bytes());
  return b.locked_;
}

void Device::release(DeviceBuffer& b) {
  const DeviceSpan s = b.span_;
  if (s.empty()) return;
  if (b.locked_) unlock(s.tier(), raw(s), s.bytes());
  deallocate(s.tier(), raw(s), s.bytes());
  ledger_.on_free(s.tier(), b.category_, s.bytes());
}

namespace {

// Runs each operation before run() returns: its failure is the caller's exception.
class InlineStream final : public Stream {
 public:
  void run(std::function<void()> op) override { op(); }
  Handle record() override {
    std::promise<void> done;
    done.set_value();
    return Handle(done.get_future().share());
  }
  void wait(const Handle& event) override { event.wait(); }
};

// Runs operations on a thread of its own, in issue order. The first failure is kept and the
// later operations skipped, so a failed copy never feeds a later step with half its data.
// `start` runs first on the thread; `drain`, if set, runs on it at every record() (a GPU
// stream's synchronize: the event is then the GPU's completion too).
class ThreadStream final : public Stream {
 public:
  ThreadStream(const std::function<void()>& start, std::function<void()> drain) : drain_(std::move(drain)) {
    if (start) queue_.push(start).get();
  }
  void run(std::function<void()> op) override {
    queue_.push([this, op = std::move(op)] {
      if (error_) return;
      try {
        op();
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  Handle record() override {
    return Handle(queue_.push([this] {
      if (error_) std::rethrow_exception(error_);
      if (drain_) drain_();
    }));
  }
  void wait(const Handle& event) override {
    run([event] { event.wait(); });
  }

 private:
  std::function<void()> drain_;
  std::exception_ptr error_;  // queue thread only
  TaskQueue queue_;           // last: joined first, before error_ goes
};

}  // namespace

std::unique_ptr<Stream> make_inline_stream() { return std::make_unique<InlineStream>(); }
std::unique_ptr<Stream> make_thread_stream() { return std::make_unique<ThreadStream>(nullptr, nullptr); }
std::unique_ptr<Stream> make_thread_stream(const std::function<void()>& start, std::function<void()> drain) {
  return std::make_unique<ThreadStream>(start, std::move(drain));
}

}  // namespace zero
