// The "counting" device: the planner's. Allocations are accounted in the ledger, by tier and
// category, exactly as a computing device accounts them, but hold no memory; operations do
// nothing. The engine's schedule runs against it unchanged (the dry run), so a prediction is
// what the engine allocates, by construction.
#include "device/device.h"

namespace zero {
namespace {

class CountingDevice final : public Device {
 public:
  explicit CountingDevice(Ledger& ledger) : Device(ledger, make_inline_stream(), make_inline_stream(), make_inline_stream()) {}

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
  void init(Stream&, const UnitPlace&, const std::vector<Segment>&, std::uint64_t, DeviceSpan) override {}
  void launch(Stream&, const std::function<void(const KernelMemory&)>&) override {}
  void* transport(const DeviceSpan&) override { return nullptr; }

 protected:
  void* allocate(Tier, std::size_t, bool) override { return nullptr; }
  void deallocate(Tier, void*, std::size_t) override {}
  bool lock(Tier, void*, std::size_t) override { return true; }
  void unlock(Tier, void*, std::size_t) override {}
};

}  // namespace

std::unique_ptr<Device> make_counting_device(Ledger& ledger) { return std::make_unique<CountingDevice>(ledger); }

}  // namespace zero
