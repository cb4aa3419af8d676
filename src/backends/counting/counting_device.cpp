// The "counting" device: the planner's. Allocations are accounted in the ledger, by tier and
// category, exactly as a computing device accounts them, but hold no memory; operations do
// nothing. The engine's schedule runs against it unchanged (the dry run), so a prediction is
// what the engine allocates, by construction.
#include <cstdint>
#include <deque>
#include <future>
#include <memory>

#include "device/device.h"

namespace zero {
namespace {

// The counting device's copy and host streams. An operation waits in the stream until something
// waits for it (an event recorded after it, or synchronize), as late as a real stream may run it,
// so a buffer an operation ends (a reduction's scratch the copy stream waits on) lives as long as
// it could on a real device: the dry run's figures are the upper bound, and deterministic.
class LazyStream final : public Stream {
 public:
  void run(std::function<void()> op) override { q_->ops.push_back(std::move(op)); }
  Handle record() override {
    const std::size_t upto = q_->ran + q_->ops.size();
    return Handle(std::async(std::launch::deferred, [q = q_, upto] { q->drain(upto); }).share());
  }
  void wait(const Handle& event) override {
    run([event] { event.wait(); });
  }

 private:
  struct Queue {
    std::deque<std::function<void()>> ops;
    std::size_t ran = 0;  // operations run so far, in issue order
    void drain(std::size_t upto) {
      while (ran < upto) {
        std::function<void()> op = std::move(ops.front());
        ops.pop_front();
        ++ran;
        op();
      }
    }
  };
  std::shared_ptr<Queue> q_ = std::make_shared<Queue>();  // shared with its events, which may outlive it
};

class CountingDevice final : public Device {
 public:
  explicit CountingDevice(Ledger& ledger) : Device(ledger, make_inline_stream(), std::make_unique<LazyStream>(), std::make_unique<LazyStream>()) {}

  std::string name() const override { return "counting"; }
  bool computes() const override { return false; }

  void do_copy(Stream&, DeviceSpan, DeviceSpan) override {}
  void convert(Stream&, DeviceSpan, DeviceSpan) override {}
  void fill(Stream&, DeviceSpan, float) override {}
  void add(Stream&, DeviceSpan, DeviceSpan) override {}
  void divide(Stream&, DeviceSpan, float) override {}
  void scale(Stream&, DeviceSpan, float) override {}
  double sum_squares(Stream&, DeviceSpan, double acc) override { return acc; }
  bool nonfinite(Stream&, DeviceSpan) override { return false; }
  void adam(Stream&, const AdamStep&, const std::vector<Segment>&, DeviceSpan, DeviceSpan, DeviceSpan, DeviceSpan,
            DeviceSpan) override {}
  bool supports(DeviceOp) const override { return true; }  // nothing computed: every operation is a no-op
  std::vector<LambNorms> do_lamb_moments(Stream&, const LambStep&, const std::vector<Segment>& segments, DeviceSpan, DeviceSpan,
                                      DeviceSpan, DeviceSpan, std::size_t, std::size_t) override {
    return std::vector<LambNorms>(segments.size());
  }
  void do_lamb_update(Stream&, const LambStep&, const std::vector<Segment>&, const std::vector<float>&, DeviceSpan, DeviceSpan,
                   DeviceSpan, DeviceSpan) override {}
  void do_init(Stream&, const UnitPlace&, const std::vector<Segment>&, std::uint64_t, DeviceSpan) override {}
  std::vector<double> do_column_abs_sums(Stream&, DeviceSpan, std::size_t, std::size_t cols) override { return std::vector<double>(cols); }
  void do_gather_columns(Stream&, DeviceSpan, DeviceSpan, std::size_t, std::size_t, const std::vector<std::uint32_t>&, bool) override {}
  void launch(Stream&, const std::function<void(const KernelMemory&)>&) override {}
  void* transport(const DeviceSpan&) override { return nullptr; }

 protected:
  // Addresses that are never dereferenced but are distinct, so that views of different buffers
  // compare as different (DeviceSpan::same_as) exactly as they do on a computing device.
  void* allocate(Tier, std::size_t bytes, bool) override {
    const std::uintptr_t p = next_;
    next_ += (bytes + 63) / 64 * 64 + 64;
    return reinterpret_cast<void*>(p);
  }
  void deallocate(Tier, void*, std::size_t) override {}
  bool lock(Tier, void*, std::size_t) override { return true; }
  void unlock(Tier, void*, std::size_t) override {}

 private:
  std::uintptr_t next_ = std::uintptr_t{1} << 40;  // the next address handed out; none is reused
};

}  // namespace

std::unique_ptr<Device> make_counting_device(Ledger& ledger) { return std::make_unique<CountingDevice>(ledger); }

}  // namespace zero
