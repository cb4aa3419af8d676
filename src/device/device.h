// The device seam: the memory tiers the engine allocates from and the operations on them.
//
// Words:
//   tier     where memory lives (memory/ledger.h): `device` is what compute reads, `host` holds
//            offloaded state.
//   device   a backend implementing allocation and every operation on engine memory; the
//            backends (src/backends/: one folder each, one registry by name) are the devices on
//            host memory, the test and planner devices, and GPU memory with its kernels.
//   stream   a sequence of operations that run in issue order. The compute stream runs each
//            operation before the call returns; the copy and host streams run theirs on a thread
//            of their own, so they overlap compute (a GPU's copy engine, and the CPU optimizer).
//   event    the completion of what a stream had issued when it was recorded (a Handle, like a
//            collective's): another stream waits on it to order itself after that work.
//
// The engine holds engine memory only as DeviceBuffer and DeviceSpan, which have no pointer it can
// dereference: every read or write goes through an operation here, a kernel launch, or (to
// communicate) transport(). That is what makes a GPU device an added file, not engine surgery.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/handle.h"
#include "memory/ledger.h"
#include "optim/adamw.h"
#include "optim/lamb.h"
#include "partition/layout.h"

namespace zero {

class Device;
class Tracer;

// The operations a backend may lack (Device::supports): Lamb's two phases, and the counter-based
// initial values.
enum class DeviceOp : int { kLamb, kInit, kColumns };
enum class Lane : int;

// Element types of engine memory (common/dtype.h): f32, bf16, f16. Every operation accepts
// 16-bit spans where it says so: it widens each element to f32, computes in f32 and rounds the
// result once (to nearest even), so an operation on a 16-bit span is the f32 operation rounded.

// A view of engine memory: where it is, how many elements of which type. Not dereferenceable.
class DeviceSpan {
 public:
  DeviceSpan() = default;
  std::size_t size() const { return n_; }
  std::uint64_t bytes() const { return n_ * dtype_bytes(dtype_); }
  bool empty() const { return n_ == 0; }
  Tier tier() const { return tier_; }
  Dtype dtype() const { return dtype_; }
  // Elements [offset, offset + n) of this span; ZERO_CHECKed against its size.
  DeviceSpan sub(std::size_t offset, std::size_t n) const;
  bool same_as(const DeviceSpan& o) const { return p_ == o.p_ && n_ == o.n_ && tier_ == o.tier_; }

 private:
  friend class Device;
  friend class DeviceBuffer;
  DeviceSpan(void* p, std::size_t n, Tier tier, Dtype dtype) : p_(p), n_(n), tier_(tier), dtype_(dtype) {}
  void* p_ = nullptr;  // the device's own address (a CPU device: host memory; strict: tagged)
  std::size_t n_ = 0;
  Tier tier_ = Tier::kDevice;
  Dtype dtype_ = Dtype::kF32;
};

// Owned engine memory, accounted in the device's ledger by tier and category, zero-filled at
// allocation unless asked otherwise. Moving transfers ownership; destruction frees it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void reset();
  DeviceSpan span() const { return span_; }
  DeviceSpan sub(std::size_t offset, std::size_t n) const { return span_.sub(offset, n); }
  std::size_t size() const { return span_.size(); }
  bool empty() const { return span_.empty(); }
  Tier tier() const { return span_.tier(); }
  Dtype dtype() const { return span_.dtype(); }

 private:
  friend class Device;
  Device* device_ = nullptr;
  Category category_ = Category::kOther;
  DeviceSpan span_;
  bool locked_ = false;
};

// A stream of operations (see the top of this file).
class Stream {
 public:
  virtual ~Stream() = default;
  // Runs `op` in stream order. After an operation has failed, the later ones are skipped and
  // the failure is what record() then carries.
  virtual void run(std::function<void()> op) = 0;
  // Completes when everything issued so far has run; rethrows the stream's first failure.
  virtual Handle record() = 0;
  // Later operations of this stream start after `event` has completed.
  virtual void wait(const Handle& event) = 0;
  void synchronize() { record().wait(); }
};

// Memory a kernel may touch while it runs: the device's addresses of engine spans (f32 spans:
// the CPU models compute in f32; the engine widens 16-bit parameters into f32 scratch first).
class KernelMemory {
 public:
  virtual ~KernelMemory() = default;
  virtual float* address(const DeviceSpan& s) const = 0;
  // A bf16 span's address, for kernels that read bf16 parameters as they are (Module::reads_bf16);
  // null where the device's kernels read f32 only.
  virtual const std::uint16_t* address_bf16(const DeviceSpan& /*s*/) const { return nullptr; }
  // The native stream the kernel must issue its work to, in the device's order (a GPU device:
  // its compute stream, a cudaStream_t); null where the kernel computes on the calling thread.
  virtual void* stream_handle() const { return nullptr; }
};

class Device {
 public:
  virtual ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  virtual std::string name() const = 0;
  Ledger& ledger() { return ledger_; }
  // Copies and the CPU optimizer record their spans on the copy and optimizer lanes, if set.
  void set_tracer(Tracer* tracer) { tracer_ = tracer; }
  Tracer* tracer() const { return tracer_; }

  // Allocates `numel` elements in `tier`; OutOfMemoryError naming `what` past the tier's
  // capacity (or when the system refuses).
  DeviceBuffer alloc(Tier tier, Category category, std::size_t numel, const std::string& what, Dtype dtype = Dtype::kF32,
                     bool zeroed = true);
  // Page-locks host-tier memory (pinned, for fast asynchronous copies); false if refused.
  bool pin(DeviceBuffer& b);

  Stream& compute() { return *compute_; }
  Stream& copies() { return *copies_; }
  Stream& host() { return *host_; }

  // ---- operations, each issued to a stream; spans may be of either tier ----
  // dst = src, of one dtype. Copies between tiers are counted (link_bytes, in bytes) when issued.
  void copy(Stream& s, DeviceSpan dst, DeviceSpan src);
  // dst[i] = src[i] in dst's dtype (widening exact, narrowing to nearest even); sizes equal.
  virtual void convert(Stream& s, DeviceSpan dst, DeviceSpan src) = 0;
  // Element-wise, on spans of any dtype (16-bit: widened, computed in f32, rounded once).
  virtual void fill(Stream& s, DeviceSpan dst, float value) = 0;                // dst[i] = value
  virtual void add(Stream& s, DeviceSpan dst, DeviceSpan src) = 0;             // dst[i] = dst[i] + src[i] (src: dst's dtype or f32; into f32, 16-bit too)
  virtual void divide(Stream& s, DeviceSpan x, float d) = 0;                    // x[i] = x[i] / d
  virtual void scale(Stream& s, DeviceSpan x, float c) = 0;                     // x[i] = x[i] * c
  // acc + sum of x[i]^2 in double, left to right; waits for the stream (its result is a number).
  virtual double sum_squares(Stream& s, DeviceSpan x, double acc) = 0;
  // True if any element of x is an infinity or a NaN (fp16 loss scaling); waits for the stream.
  virtual bool nonfinite(Stream& s, DeviceSpan x) = 0;
  // Adam over the elements `segments` describe (offsets into p, g, m, v); padding skipped. p, m
  // and v are f32 (p: the master parameters in mixed precision); g is f32 or 16-bit (widened).
  // `copy`, if not empty, is a 16-bit span of p's size that receives the updated parameters,
  // rounded, in the same pass (the CPU Adam's fused copy).
  virtual void adam(Stream& s, const AdamStep& step, const std::vector<Segment>& segments, DeviceSpan p, DeviceSpan g,
                    DeviceSpan m, DeviceSpan v, DeviceSpan copy) = 0;
  // Lamb (optim/lamb.h), in two phases around a reduction of its sums across ranks; spans and
  // dtypes as adam's (p, m, v f32; g f32 or 16-bit), padding skipped.
  // Phase 1: m and v of every segment updated, and p (read only) and the update u summed: for
  // segment k, out[k] holds the sums of p^2 and u^2 over its elements that lie within
  // [norm_begin, norm_begin + norm_numel) of p, summed in lamb.h's order (blocks of
  // kLambSumBlock from the start of that run, each in double left to right, block sums in
  // order), so every backend gives the same bits; {0, 0} for padding or a segment outside that
  // range. Waits for the stream (its result is numbers, on the host).
  std::vector<LambNorms> lamb_moments(Stream& s, const LambStep& step, const std::vector<Segment>& segments, DeviceSpan p,
                                      DeviceSpan g, DeviceSpan m, DeviceSpan v, std::size_t norm_begin, std::size_t norm_numel);
  // Phase 2: p[i] = fma(-coef[k], u[i], p[i]) for the elements of segment k (coef: one per
  // segment, lamb_coefficient of the parameter's total sums), u recomputed from p, m and v
  // exactly as in phase 1. `copy` as adam's: the updated parameters, rounded, in the same pass.
  void lamb_update(Stream& s, const LambStep& step, const std::vector<Segment>& segments, const std::vector<float>& coef,
                   DeviceSpan p, DeviceSpan m, DeviceSpan v, DeviceSpan copy);
  // Counter-based initial values of the elements of `unit` that `segments` describe; padding
  // zero; rounded to out's dtype.
  void init(Stream& s, const UnitPlace& unit, const std::vector<Segment>& segments, std::uint64_t seed, DeviceSpan out);
  // Columns of a row-major matrix with `cols` columns, of which x holds the elements
  // [first, first + x.size()) (a rank's slice of a weight; ZenFlow, engine/zenflow.h), of any
  // dtype: the sum of |x| per column (cols entries), in double over x's elements in order; waits for the stream.
  std::vector<double> column_abs_sums(Stream& s, DeviceSpan x, std::size_t first, std::size_t cols);
  // dst[j] = the j-th element of src whose column is in `selected` (increasing), in order; and
  // back. Spans of either tier and one dtype; dst (gather) or src (scatter) holds exactly those elements.
  void gather_columns(Stream& s, DeviceSpan dst, DeviceSpan src, std::size_t first, std::size_t cols,
                      const std::vector<std::uint32_t>& selected);
  void scatter_columns(Stream& s, DeviceSpan dst, DeviceSpan src, std::size_t first, std::size_t cols,
                       const std::vector<std::uint32_t>& selected);
  // Whether the backend runs `op` itself; where not, the operation above runs through the device
  // layer's one host-staged fallback (host_fallback.cpp): device-tier operands copied into host
  // memory, the CPU devices' own operation (host_ops.h) run there, the results copied back, so
  // the bits are the CPU's. No caller asks which backend it has.
  virtual bool supports(DeviceOp op) const = 0;
  // Runs a compute kernel (a model's forward or backward) with the memory it is given.
  virtual void launch(Stream& s, const std::function<void(const KernelMemory&)>& kernel) = 0;
  // What a communicator reads and writes for span x: a CPU transport's address of it (x.size()
  // elements of x.dtype()). Only for issuing collectives (engine/collectives.cpp) and reading
  // host-tier results out; a counting device gives nullptr.
  virtual void* transport(const DeviceSpan& x) = 0;
  // Bytes copied between the tiers so far (the host<->device link, e.g. PCIe), by direction.
  struct LinkBytes {
    std::uint64_t to_host = 0, to_device = 0;
    LinkBytes operator-(const LinkBytes& earlier) const { return {to_host - earlier.to_host, to_device - earlier.to_device}; }
  };
  LinkBytes link_bytes() const { return {to_host_.load(), to_device_.load()}; }
  // True when transport() gives host addresses any communicator can read (false for the cuda
  // device's GPU memory: a communicator that cannot read it gets host copies, collectives_staged.cpp).
  virtual bool transport_is_host() const { return true; }
  // True when operations compute (false for the counting device: the planner's dry run).
  virtual bool computes() const { return true; }

 protected:
  Device(Ledger& ledger, std::unique_ptr<Stream> compute, std::unique_ptr<Stream> copies, std::unique_ptr<Stream> host);
  // The backend's allocation: an address for `bytes` bytes of `tier` (zero-filled if asked), or
  // nullptr when the system refuses; and its release.
  virtual void do_copy(Stream& s, DeviceSpan dst, DeviceSpan src) = 0;
  // The operations a backend runs itself where supports() says so (otherwise never called).
  virtual std::vector<LambNorms> do_lamb_moments(Stream& s, const LambStep& step, const std::vector<Segment>& segments,
                                                 DeviceSpan p, DeviceSpan g, DeviceSpan m, DeviceSpan v,
                                                 std::size_t norm_begin, std::size_t norm_numel);
  virtual void do_lamb_update(Stream& s, const LambStep& step, const std::vector<Segment>& segments,
                              const std::vector<float>& coef, DeviceSpan p, DeviceSpan m, DeviceSpan v, DeviceSpan copy);
  virtual void do_init(Stream& s, const UnitPlace& unit, const std::vector<Segment>& segments, std::uint64_t seed,
                       DeviceSpan out);
  virtual std::vector<double> do_column_abs_sums(Stream& s, DeviceSpan x, std::size_t first, std::size_t cols);
  virtual void do_gather_columns(Stream& s, DeviceSpan dst, DeviceSpan src, std::size_t first, std::size_t cols,
                                 const std::vector<std::uint32_t>& selected, bool scatter);
  virtual void* allocate(Tier tier, std::size_t bytes, bool zeroed) = 0;
  virtual void deallocate(Tier tier, void* p, std::size_t bytes) = 0;
  virtual bool lock(Tier tier, void* p, std::size_t bytes) = 0;
  virtual void unlock(Tier tier, void* p, std::size_t bytes) = 0;
  // For implementations: a span's device address, and a span over an address.
  static void* raw(const DeviceSpan& s) { return s.p_; }
  static DeviceSpan make_span(void* p, std::size_t n, Tier t, Dtype d) { return {p, n, t, d}; }

 private:
  friend class DeviceBuffer;
  void release(DeviceBuffer& b);
  // The host-staged fallback (host_fallback.cpp): host copies of the device-tier spans (those in
  // `read` copied in; host-tier spans used as they are), and the written ones copied back.
  struct HostStaged;
  HostStaged stage_on_host(Stream& s, const std::vector<DeviceSpan>& spans, const std::vector<bool>& read, const char* what);
  void unstage(Stream& s, HostStaged& st, const std::vector<DeviceSpan>& spans, const std::vector<bool>& written);
  void count_packed(const DeviceSpan& dst, const DeviceSpan& src, std::uint64_t bytes);

  Ledger& ledger_;
  Tracer* tracer_ = nullptr;
  std::unique_ptr<Stream> compute_, copies_, host_;
  std::atomic<std::uint64_t> to_host_{0}, to_device_{0};
};

// The devices are made by name by the backends' registry (backends/registry.h: make_device).

// Streams for devices that run on the CPU: one that runs each operation at once, and one with a
// thread of its own. Shared by the CPU, strict and counting devices.
std::unique_ptr<Stream> make_inline_stream();
std::unique_ptr<Stream> make_thread_stream();
// A thread stream whose thread runs `start` first and `drain` at each record() (the cuda device's:
// select the GPU; wait for the GPU stream).
std::unique_ptr<Stream> make_thread_stream(const std::function<void()>& start, std::function<void()> drain);

}  // namespace zero
