// The devices that compute with the CPU on host memory: "cpu", where the device tier is host
// RAM with a ledger of its own, and "strict", the seam's test: its device-tier addresses are
// tagged so that the host faults on any dereference that did not go through an operation here
// (bit 62 set makes an x86-64 address non-canonical; elsewhere it lies far outside user space).
// Both run the same operation bodies on the addresses they resolve; only resolution differs.
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/trace.h"
#include "device/device.h"
#include "optim/cpu_adam.h"
#include "partition/init.h"

namespace zero {
namespace {

class HostMemoryDevice : public Device, private KernelMemory {
 public:
  HostMemoryDevice(Ledger& ledger, bool strict)
      : Device(ledger, make_inline_stream(), make_thread_stream(), make_thread_stream()), strict_(strict) {}

  std::string name() const override { return strict_ ? "strict" : "cpu"; }

  void do_copy(Stream& s, DeviceSpan dst, DeviceSpan src) override {
    same_size(dst, src, "copy");
    s.run([this, dst, src] {
      const Lane lane = dst.tier() != src.tier() ? Lane::kCopy : Lane::kCompute;
      TraceSpan span(lane == Lane::kCopy ? tracer() : nullptr, lane, dst.tier() == Tier::kHost ? "to host" : "to device");
      std::memcpy(at(dst), at(src), dst.bytes());
    });
  }
  void fill(Stream& s, DeviceSpan dst, float value) override {
    s.run([this, dst, value] {
      float* p = at(dst);
      for (std::size_t i = 0; i < dst.size(); ++i) p[i] = value;
    });
  }
  void add(Stream& s, DeviceSpan dst, DeviceSpan src) override {
    same_size(dst, src, "add");
    s.run([this, dst, src] {
      float* d = at(dst);
      const float* x = at(src);
      for (std::size_t i = 0; i < dst.size(); ++i) d[i] = d[i] + x[i];
    });
  }
  void divide(Stream& s, DeviceSpan x, float d) override {
    s.run([this, x, d] {
      float* p = at(x);
      for (std::size_t i = 0; i < x.size(); ++i) p[i] = p[i] / d;
    });
  }
  void scale(Stream& s, DeviceSpan x, float c) override {
    s.run([this, x, c] {
      float* p = at(x);
      for (std::size_t i = 0; i < x.size(); ++i) p[i] = p[i] * c;
    });
  }
  double sum_squares(Stream& s, DeviceSpan x, double acc) override {
    double out = acc;
    s.run([this, x, &out] {
      const float* p = at(x);
      for (std::size_t i = 0; i < x.size(); ++i) out += static_cast<double>(p[i]) * p[i];
    });
    s.synchronize();
    return out;
  }
  void adam(Stream& s, const AdamStep& step, const std::vector<Segment>& segments, DeviceSpan p, DeviceSpan g,
            DeviceSpan m, DeviceSpan v) override {
    same_size(p, g, "adam");
    same_size(p, m, "adam");
    same_size(p, v, "adam");
    s.run([this, step, segments, p, g, m, v] {
      TraceSpan span(p.tier() == Tier::kHost ? tracer() : nullptr, Lane::kOptimizer, "adam");
      float *pp = at(p), *mp = at(m), *vp = at(v);
      const float* gp = at(g);
      for (const Segment& seg : segments) {
        if (seg.param < 0) continue;
        const std::size_t o = seg.offset, n = seg.numel;
        ZERO_CHECK(o + n <= p.size(), "adam segment outside its span");
        adam_step(step, seg.decay, {pp + o, n}, {gp + o, n}, {mp + o, n}, {vp + o, n});  // SIMD, bit-identical to the reference
      }
    });
  }
  void init(Stream& s, const UnitPlace& unit, const std::vector<Segment>& segments, std::uint64_t seed,
            DeviceSpan out) override {
    s.run([this, unit, segments, seed, out] { init_segments(unit, segments, seed, at(out)); });
  }
  void launch(Stream& s, const std::function<void(const KernelMemory&)>& kernel) override {
    s.run([this, &kernel] { kernel(*this); });
    s.synchronize();  // the kernel is the caller's: it must have run before launch returns
  }
  std::span<float> transport(const DeviceSpan& x) override { return {at(x), x.size()}; }

 protected:
  float* allocate(Tier tier, std::size_t bytes, bool zeroed) override {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    auto* p = static_cast<float*>(std::aligned_alloc(64, rounded));
    if (p == nullptr) return nullptr;
    if (zeroed) std::memset(p, 0, rounded);
    return tag(tier, p);
  }
  void deallocate(Tier tier, float* p, std::size_t) override { std::free(untag(tier, p)); }
  bool lock(Tier tier, float* p, std::size_t bytes) override { return mlock(untag(tier, p), bytes) == 0; }
  void unlock(Tier tier, float* p, std::size_t bytes) override { munlock(untag(tier, p), bytes); }

 private:
  static constexpr std::uintptr_t kTag = std::uintptr_t{1} << 62;

  static void same_size(const DeviceSpan& a, const DeviceSpan& b, const char* op) {
    ZERO_CHECK(a.size() == b.size(), op, " of spans of ", a.size(), " and ", b.size(), " elements");
    ZERO_CHECK(a.dtype() == Dtype::kF32 && b.dtype() == Dtype::kF32, op, " on ", dtype_label(a.dtype()),
               ": this device computes in f32 only");
  }
  float* tag(Tier tier, float* p) const {
    if (!strict_ || tier != Tier::kDevice) return p;
    return reinterpret_cast<float*>(reinterpret_cast<std::uintptr_t>(p) | kTag);
  }
  float* untag(Tier tier, float* p) const {
    if (!strict_ || tier != Tier::kDevice) return p;
    return reinterpret_cast<float*>(reinterpret_cast<std::uintptr_t>(p) & ~kTag);
  }
  float* at(const DeviceSpan& s) const { return s.empty() ? nullptr : untag(s.tier(), raw(s)); }
  float* address(const DeviceSpan& s) const override { return at(s); }

  bool strict_;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device(Ledger& ledger) { return std::make_unique<HostMemoryDevice>(ledger, false); }
std::unique_ptr<Device> make_strict_device(Ledger& ledger) { return std::make_unique<HostMemoryDevice>(ledger, true); }

}  // namespace zero
