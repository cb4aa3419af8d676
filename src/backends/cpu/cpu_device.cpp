// The devices that compute with the CPU on host memory: "cpu", where the device tier is host
// RAM with a ledger of its own, and "strict", the seam's test: its device-tier addresses are
// tagged so that the host faults on any dereference that did not go through an operation here
// (bit 62 set makes an x86-64 address non-canonical; elsewhere it lies far outside user space).
// Both run the same operation bodies on the addresses they resolve; only resolution differs.
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/error.h"
#include "common/trace.h"
#include "common/work_clock.h"
#include "device/device.h"
#include "device/host_ops.h"

namespace zero {
namespace {

// Freed device-tier blocks kept for the next allocation of the same size. Fresh memory costs a
// page fault per 4 KiB page on first touch (the kernel zeroes each page), and a mixed-precision
// step allocates and frees each unit's f32 compute scratch (engine/schedule.cpp) for every unit,
// forward and backward: measured at the 50m bench model, those faults took 100-170 ms of a bf16
// step's 290 ms "rest" (bench/README.md). The ledger counts the bytes in use, as before; the blocks
// kept are freed memory the process still holds, as a heap's free list is: at most kBlocks of
// them, each at least kMinBytes (smaller ones the heap reuses itself), kMaxBytes in all,
// released with the device or when the system refuses an allocation.
class KeptBlocks {
 public:
  ~KeptBlocks() {
    for (const Block& b : blocks_) std::free(b.p);
  }
  // A kept block of exactly `bytes`, or null.
  void* take(std::size_t bytes) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
      if (it->bytes != bytes) continue;
      void* p = it->p;
      kept_ -= it->bytes;
      blocks_.erase(it);
      return p;
    }
    return nullptr;
  }
  // Keeps p (of `bytes`) if it is large enough and the kept bytes stay within kMaxBytes; frees
  // the oldest blocks beyond kBlocks, and p itself where it is not kept.
  void keep(void* p, std::size_t bytes) {
    if (bytes < kMinBytes || bytes > kMaxBytes) return std::free(p);
    const std::lock_guard<std::mutex> lock(mutex_);
    blocks_.push_back({p, bytes});
    kept_ += bytes;
    while (blocks_.size() > kBlocks || kept_ > kMaxBytes) {
      std::free(blocks_.front().p);
      kept_ -= blocks_.front().bytes;
      blocks_.erase(blocks_.begin());
    }
  }
  // Frees every kept block (the system refused an allocation: give it back what is held).
  void release() {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const Block& b : blocks_) std::free(b.p);
    blocks_.clear();
    kept_ = 0;
  }

 private:
  static constexpr std::size_t kBlocks = 6;  // stage 3 mixed precision: two units gathered, their f32 copies, gradients
  static constexpr std::size_t kMinBytes = std::size_t{1} << 20;
  // What the ledger does not see: freed memory the process still holds, bounded.
  static constexpr std::size_t kMaxBytes = std::size_t{256} << 20;
  struct Block {
    void* p;
    std::size_t bytes;
  };
  std::mutex mutex_;  // allocations come from the compute, copy and optimizer threads
  std::vector<Block> blocks_;  // oldest first
  std::size_t kept_ = 0;       // their bytes
};

class HostMemoryDevice : public Device, private KernelMemory {
 public:
  HostMemoryDevice(Ledger& ledger, bool strict)
      : Device(ledger, make_inline_stream(), make_thread_stream(), make_thread_stream()), strict_(strict) {}

  std::string name() const override { return strict_ ? "strict" : "cpu"; }
  // strict leaves Lamb, the initial values and ZenFlow's column operations to the device layer's host-staged fallback, as a
  // GPU device does: so the CPU tests run that fallback, on memory the host cannot dereference.
  bool supports(DeviceOp op) const override { return !strict_ || (op != DeviceOp::kLamb && op != DeviceOp::kInit && op != DeviceOp::kColumns); }

  void do_copy(Stream& s, DeviceSpan dst, DeviceSpan src) override {
    same_size(dst, src, "copy");
    s.run([this, dst, src] {
      const Lane lane = dst.tier() != src.tier() ? Lane::kCopy : Lane::kCompute;
      TraceSpan span(lane == Lane::kCopy ? tracer() : nullptr, lane, dst.tier() == Tier::kHost ? "to host" : "to device");
      WorkSpan work(Work::kCopy);
      std::memcpy(at(dst), at(src), dst.bytes());
    });
  }
  void convert(Stream& s, DeviceSpan dst, DeviceSpan src) override {
    same_size(dst, src, "convert");
    s.run([this, dst, src] {
      WorkSpan work(Work::kCopy);
      host_ops::convert(run_of(dst), run_of(src));
    });
  }
  void fill(Stream& s, DeviceSpan dst, float value) override {
    s.run([this, dst, value] {
      WorkSpan work(Work::kCopy);
      host_ops::fill(run_of(dst), value);
    });
  }
  void add(Stream& s, DeviceSpan dst, DeviceSpan src) override {
    same_size(dst, src, "add");
    s.run([this, dst, src] {
      WorkSpan work(Work::kCopy);
      host_ops::add(run_of(dst), run_of(src));
    });
  }
  void divide(Stream& s, DeviceSpan x, float d) override {
    s.run([this, x, d] {
      WorkSpan work(Work::kCopy);
      host_ops::divide(run_of(x), d);
    });
  }
  void scale(Stream& s, DeviceSpan x, float c) override {
    s.run([this, x, c] {
      WorkSpan work(Work::kCopy);
      host_ops::scale(run_of(x), c);
    });
  }
  double sum_squares(Stream& s, DeviceSpan x, double acc) override {
    double out = acc;
    s.run([this, x, &out] { out = host_ops::sum_squares(run_of(x), out); });
    s.synchronize();
    return out;
  }
  bool nonfinite(Stream& s, DeviceSpan x) override {
    bool out = false;
    s.run([this, x, &out] { out = host_ops::nonfinite(run_of(x)); });
    s.synchronize();
    return out;
  }
  void adam(Stream& s, const AdamStep& step, const std::vector<Segment>& segments, DeviceSpan p, DeviceSpan g,
            DeviceSpan m, DeviceSpan v, DeviceSpan copy) override {
    same_size(p, g, "adam");
    same_size(p, m, "adam");
    same_size(p, v, "adam");
    if (!copy.empty()) same_size(p, copy, "adam");
    s.run([this, step, segments, p, g, m, v, copy] {
      TraceSpan span(p.tier() == Tier::kHost ? tracer() : nullptr, Lane::kOptimizer, "adam");
      WorkSpan work(Work::kOptimizer);
      host_ops::adam(step, segments, run_of(p), run_of(g), run_of(m), run_of(v), run_of(copy));
    });
  }
  std::vector<double> do_column_abs_sums(Stream& s, DeviceSpan x, std::size_t first, std::size_t cols) override {
    std::vector<double> out;
    s.run([this, x, first, cols, &out] { out = host_ops::column_abs_sums(run_of(x), first, cols); });
    s.synchronize();
    return out;
  }
  void do_gather_columns(Stream& s, DeviceSpan dst, DeviceSpan src, std::size_t first, std::size_t cols,
                         const std::vector<std::uint32_t>& selected, bool scatter) override {
    s.run([this, dst, src, first, cols, selected, scatter] {
      host_ops::gather_columns(run_of(dst), run_of(src), first, cols, selected, scatter);
    });
  }
  std::vector<LambNorms> do_lamb_moments(Stream& s, const LambStep& step, const std::vector<Segment>& segments, DeviceSpan p,
                                      DeviceSpan g, DeviceSpan m, DeviceSpan v, std::size_t norm_begin,
                                      std::size_t norm_numel) override {
    same_size(p, g, "lamb_moments");
    same_size(p, m, "lamb_moments");
    same_size(p, v, "lamb_moments");
    std::vector<LambNorms> out;
    s.run([this, &out, step, segments, p, g, m, v, norm_begin, norm_numel] {
      TraceSpan span(p.tier() == Tier::kHost ? tracer() : nullptr, Lane::kOptimizer, "lamb moments");
      WorkSpan work(Work::kOptimizer);
      out = host_ops::lamb_moments(step, segments, run_of(p), run_of(g), run_of(m), run_of(v), norm_begin, norm_numel);
    });
    s.synchronize();
    return out;
  }
  void do_lamb_update(Stream& s, const LambStep& step, const std::vector<Segment>& segments, const std::vector<float>& coef,
                   DeviceSpan p, DeviceSpan m, DeviceSpan v, DeviceSpan copy) override {
    same_size(p, m, "lamb_update");
    same_size(p, v, "lamb_update");
    if (!copy.empty()) same_size(p, copy, "lamb_update");
    s.run([this, step, segments, coef, p, m, v, copy] {
      TraceSpan span(p.tier() == Tier::kHost ? tracer() : nullptr, Lane::kOptimizer, "lamb update");
      WorkSpan work(Work::kOptimizer);
      host_ops::lamb_update(step, segments, coef, run_of(p), run_of(m), run_of(v), run_of(copy));
    });
  }
  void do_init(Stream& s, const UnitPlace& unit, const std::vector<Segment>& segments, std::uint64_t seed,
            DeviceSpan out) override {
    s.run([this, unit, segments, seed, out] { host_ops::init(unit, segments, seed, run_of(out)); });
  }
  void launch(Stream& s, const std::function<void(const KernelMemory&)>& kernel) override {
    s.run([this, &kernel] { kernel(*this); });
    s.synchronize();  // the kernel is the caller's: it must have run before launch returns
  }
  void* transport(const DeviceSpan& x) override { return at(x); }

 protected:
  void* allocate(Tier tier, std::size_t bytes, bool zeroed) override {
    WorkSpan work(Work::kAllocate);
    // Host buffers of a page or more start on a page: the NVMe tier reads and writes them with
    // O_DIRECT, which wants 4096-byte addresses (io/async_file.h); at 64 bytes every chunk went
    // through the page cache instead, and the disk's time was the page cache's.
    const std::size_t align = tier == Tier::kHost && bytes >= kPage ? kPage : 64;
    const std::size_t rounded = (bytes + align - 1) / align * align;
    void* p = tier == Tier::kDevice ? kept_.take(rounded) : nullptr;
    if (p == nullptr) p = std::aligned_alloc(align, rounded);
    if (p == nullptr) {
      kept_.release();
      p = std::aligned_alloc(align, rounded);
    }
    if (p == nullptr) return nullptr;
    if (zeroed) {
      std::memset(p, 0, rounded);
    } else if (strict_) {
      // strict, the seam's test: memory asked for unzeroed comes back all ones bytes (NaN as f32,
      // bf16 and f16), so a kernel or gather that reads an element before writing it shows in
      // every test on strict instead of reading a reused block's old, plausible values.
      std::memset(p, 0xFF, rounded);
    }
    return tag(tier, p);
  }
  void deallocate(Tier tier, void* p, std::size_t bytes) override {
    WorkSpan work(Work::kAllocate);
    void* block = untag(tier, p);
    if (tier == Tier::kDevice) return kept_.keep(block, (bytes + 63) / 64 * 64);
    std::free(block);
  }
  bool lock(Tier tier, void* p, std::size_t bytes) override { return mlock(untag(tier, p), bytes) == 0; }
  void unlock(Tier tier, void* p, std::size_t bytes) override { munlock(untag(tier, p), bytes); }

 private:
  static constexpr std::uintptr_t kTag = std::uintptr_t{1} << 62;
  static constexpr std::size_t kPage = 4096;  // O_DIRECT's alignment (io::kDirectAlignment)

  static void same_size(const DeviceSpan& a, const DeviceSpan& b, const char* op) {
    ZERO_CHECK(a.size() == b.size(), op, " of spans of ", a.size(), " and ", b.size(), " elements");
  }
  void* tag(Tier tier, void* p) const {
    if (!strict_ || tier != Tier::kDevice) return p;
    return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) | kTag);
  }
  void* untag(Tier tier, void* p) const {
    if (!strict_ || tier != Tier::kDevice) return p;
    return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) & ~kTag);
  }
  void* at(const DeviceSpan& s) const { return s.empty() ? nullptr : untag(s.tier(), raw(s)); }
  host_ops::Run run_of(const DeviceSpan& s) const { return {at(s), s.size(), s.dtype()}; }
  float* address(const DeviceSpan& s) const override {
    ZERO_CHECK(s.empty() || s.dtype() == Dtype::kF32, "a kernel reads f32 memory, not ", dtype_label(s.dtype()));
    return static_cast<float*>(at(s));
  }
  const std::uint16_t* address_bf16(const DeviceSpan& s) const override {
    ZERO_CHECK(s.dtype() == Dtype::kBf16, "bf16 memory expected, not ", dtype_label(s.dtype()));
    return static_cast<const std::uint16_t*>(at(s));
  }

  bool strict_;
  KeptBlocks kept_;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device(Ledger& ledger) { return std::make_unique<HostMemoryDevice>(ledger, false); }
std::unique_ptr<Device> make_strict_device(Ledger& ledger) { return std::make_unique<HostMemoryDevice>(ledger, true); }

}  // namespace zero
