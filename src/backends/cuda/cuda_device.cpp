// The "cuda" device: the device tier is GPU memory (cudaMalloc), the host tier host memory that
// pin() page-locks (cudaHostRegister) for asynchronous copies; operations are CUDA kernels on
// device-tier spans (cuda_ops.h, the CUDA Adam) and the CPU's own operations (host_ops) on
// host-tier spans, run in stream order after the stream's GPU work. See cuda_device.h.
//
// Memory. cudaMalloc per buffer, no caching pool: the ledger's device figures are the bytes
// asked for, and cudaMemGetInfo sees them rounded up to the driver's granularity (the slack).
// cudaFree synchronizes the GPU, so a freed buffer is never reused under a running kernel.
// A zeroed buffer is cleared by cudaMemset on the legacy stream, which the (blocking) streams of
// this device are ordered after.
//
// Bits. Every operation gives the CPU device's bits: the element-wise kernels and the Adam are
// the CPU's operations in its order (cuda_ops.h, optim/cuda_adam.h); sum_squares is the
// sequential double sum, exactly (exact_sum.h); init computes the counter-based values on the
// host (host_ops::init, the CPU's code: glibc's log and cos are not the GPU's) and copies them.
//
// transport(x) synchronizes the compute stream before it returns x's address (a device address
// for device-tier spans: for NCCL, or a communicator that stages through host memory), so a
// collective issued on it reads what the compute stream wrote, and a host-tier read sees the
// copy issued just before.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "backends/cuda/cuda_backend.h"
#include "common/error.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_ops.h"
#include "device/host_ops.h"
#include "backends/cuda/cuda_adam.h"

namespace zero {
namespace {

constexpr std::size_t kHostAlign = 4096;  // host-tier buffers: whole pages, for cudaHostRegister

}  // namespace

int cuda_device_ordinal() {
  std::string why;
  if (!cuda_device_present(&why)) {
    throw ConfigError(cat("[device] --device cuda needs a CUDA GPU, and this machine has none (", why,
                          "): use --device cpu"));
  }
  int count = 0;
  cuda_check(cudaGetDeviceCount(&count), "counting GPUs");
  if (const char* chosen = std::getenv("ZERO_CUDA_DEVICE")) {
    const int ordinal = std::atoi(chosen);
    if (ordinal < 0 || ordinal >= count) {
      throw ConfigError(cat("[device] ZERO_CUDA_DEVICE=", chosen, " but this machine has ", count, " GPU(s): use 0 to ", count - 1));
    }
    return ordinal;
  }
  // A GPU per rank, chosen by the rank's index among its host's ranks as the launcher numbers them
  // (the device exists before the communicator): Open MPI's variable, Slurm's, MPICH's. More ranks
  // on a host than GPUs share them round-robin (--comm mpi stages through host memory); the nccl
  // transport refuses that (nccl_comm.cpp), as NCCL cannot run two ranks on one GPU.
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
    if (const char* local = std::getenv(var)) return std::atoi(local) % count;
  }
  return 0;
}

namespace {

class CudaDevice final : public Device, private CudaKernelMemory {
 public:
  CudaDevice(Ledger& ledger, int ordinal)
      : Device(ledger, make_cuda_compute_stream(ordinal), make_cuda_thread_stream(ordinal), make_cuda_thread_stream(ordinal)),
        ordinal_(ordinal) {}

  std::string name() const override { return "cuda"; }
  bool transport_is_host() const override { return false; }

  void do_copy(Stream& s, DeviceSpan dst, DeviceSpan src) override {
    s.run([&s, dst, src] {
      cuda_check(cudaMemcpyAsync(raw(dst), raw(src), dst.bytes(), cudaMemcpyDefault, cuda_stream(s)), "a copy");
    });
  }

  void convert(Stream& s, DeviceSpan dst, DeviceSpan src) override {
    same_size(dst, src, "convert");
    if (dst.dtype() == src.dtype()) {
      do_copy(s, dst, src);  // between tiers too
      return;
    }
    if (dst.tier() != src.tier()) {
      across(s, dst, src, [this](Stream& t, DeviceSpan d, DeviceSpan x) { convert(t, d, x); });
      return;
    }
    on_tier(s, dst, [=] { host_ops::convert(run_of(dst), run_of(src)); },
            [=](cudaStream_t cs) { cuda_ops::convert(raw(dst), dst.dtype(), raw(src), src.dtype(), dst.size(), cs); });
  }
  void fill(Stream& s, DeviceSpan dst, float value) override {
    on_tier(s, dst, [=] { host_ops::fill(run_of(dst), value); },
            [=](cudaStream_t cs) { cuda_ops::fill(raw(dst), dst.size(), dst.dtype(), value, cs); });
  }
  void add(Stream& s, DeviceSpan dst, DeviceSpan src) override {
    same_size(dst, src, "add");
    if (dst.tier() != src.tier()) {
      across(s, dst, src, [this](Stream& t, DeviceSpan d, DeviceSpan x) { add(t, d, x); });
      return;
    }
    on_tier(s, dst, [=] { host_ops::add(run_of(dst), run_of(src)); },
            [=](cudaStream_t cs) { cuda_ops::add(raw(dst), dst.dtype(), raw(src), src.dtype(), dst.size(), cs); });
  }
  void divide(Stream& s, DeviceSpan x, float d) override {
    on_tier(s, x, [=] { host_ops::divide(run_of(x), d); },
            [=](cudaStream_t cs) { cuda_ops::divide(raw(x), x.size(), x.dtype(), d, cs); });
  }
  void scale(Stream& s, DeviceSpan x, float c) override {
    on_tier(s, x, [=] { host_ops::scale(run_of(x), c); },
            [=](cudaStream_t cs) { cuda_ops::scale(raw(x), x.size(), x.dtype(), c, cs); });
  }
  double sum_squares(Stream& s, DeviceSpan x, double acc) override {
    return result(s, x, acc, [x](double a) { return host_ops::sum_squares(run_of(x), a); },
                  [x](double a, cudaStream_t cs) { return cuda_ops::sum_squares(raw(x), x.size(), x.dtype(), a, cs); });
  }
  bool nonfinite(Stream& s, DeviceSpan x) override {
    return result(s, x, false, [x](bool) { return host_ops::nonfinite(run_of(x)); },
                  [x](bool, cudaStream_t cs) { return cuda_ops::nonfinite(raw(x), x.size(), x.dtype(), cs); });
  }
  void adam(Stream& s, const AdamStep& step, const std::vector<Segment>& segments, DeviceSpan p, DeviceSpan g,
            DeviceSpan m, DeviceSpan v, DeviceSpan copy) override;
  // Lamb and the initial values run through the device layer's host-staged fallback (they run
  // on the host, once per step and once at start): the CPU's bits by construction.
  bool supports(DeviceOp op) const override { return op != DeviceOp::kLamb && op != DeviceOp::kInit && op != DeviceOp::kColumns; }
  void launch(Stream& s, const std::function<void(const KernelMemory&)>& kernel) override {
    compute_stream_ = cuda_stream(s);
    s.run([this, &kernel] { kernel(*this); });
  }
  void* transport(const DeviceSpan& x) override {
    compute().synchronize();
    return raw(x);
  }

 protected:
  void* allocate(Tier tier, std::size_t bytes, bool zeroed) override;
  void deallocate(Tier tier, void* p, std::size_t bytes) override;
  bool lock(Tier tier, void* p, std::size_t bytes) override {
    if (tier == Tier::kDevice) return true;  // device memory needs no pinning
    const cudaError_t rc = cudaHostRegister(p, round_up(bytes), cudaHostRegisterDefault);
    if (rc != cudaSuccess) cudaGetLastError();  // refused: the buffer stays pageable, as the seam allows
    return rc == cudaSuccess;
  }
  void unlock(Tier tier, void* p, std::size_t) override {
    if (tier != Tier::kHost) return;
    // A copy from page-locked memory runs after the call that issued it returned (unlike one from
    // pageable memory, which is staged first): let every copy finish before the pages go.
    cudaDeviceSynchronize();
    cudaHostUnregister(p);
  }

 private:
  static std::size_t round_up(std::size_t bytes) { return (bytes + kHostAlign - 1) / kHostAlign * kHostAlign; }
  static void same_size(const DeviceSpan& a, const DeviceSpan& b, const char* op) {
    ZERO_CHECK(a.size() == b.size(), op, " of spans of ", a.size(), " and ", b.size(), " elements");
  }
  static host_ops::Run run_of(const DeviceSpan& s) { return {raw(s), s.size(), s.dtype()}; }

  // Runs `on_host` (host-tier x: after the stream's GPU work, on the stream's thread) or issues
  // `on_gpu` to the stream's CUDA stream (device-tier x).
  template <typename Host, typename Gpu>
  void on_tier(Stream& s, const DeviceSpan& x, Host on_host, Gpu on_gpu) {
    cudaStream_t cs = cuda_stream(s);
    if (x.tier() == Tier::kHost) {
      s.run([cs, on_host] {
        cuda_check(cudaStreamSynchronize(cs), "the GPU work before a host operation");
        on_host();
      });
    } else {
      s.run([cs, on_gpu] { on_gpu(cs); });
    }
  }

  // An operation with a result (from `init`), which waits for the stream.
  template <typename T, typename Host, typename Gpu>
  T result(Stream& s, const DeviceSpan& x, T init, Host on_host, Gpu on_gpu) {
    T out = init;
    on_tier(s, x, [&out, on_host] { out = on_host(out); }, [&out, on_gpu](cudaStream_t cs) { out = on_gpu(out, cs); });
    s.synchronize();
    return out;
  }

  // An operation between tiers: src is copied into scratch of dst's tier, and it runs there.
  template <typename Op>
  void across(Stream& s, DeviceSpan dst, DeviceSpan src, Op op) {
    auto scratch = std::make_shared<DeviceBuffer>(alloc(dst.tier(), Category::kOther, src.size(), "a copy between tiers", src.dtype(), false));
    do_copy(s, scratch->span(), src);
    op(s, dst, scratch->span());
    s.synchronize();  // the scratch goes now
  }

  float* address(const DeviceSpan& s) const override {
    ZERO_CHECK(s.empty() || s.dtype() == Dtype::kF32, "a kernel reads f32 memory, not ", dtype_label(s.dtype()));
    return static_cast<float*>(raw(s));
  }
  cudaStream_t stream() const override { return compute_stream_; }
  void* stream_handle() const override { return compute_stream_; }  // the model's kernels run on it

  int ordinal_;
  cudaStream_t compute_stream_ = nullptr;
};

void CudaDevice::adam(Stream& s, const AdamStep& step, const std::vector<Segment>& segments, DeviceSpan p, DeviceSpan g,
                      DeviceSpan m, DeviceSpan v, DeviceSpan copy) {
  same_size(p, g, "adam");
  same_size(p, m, "adam");
  same_size(p, v, "adam");
  if (!copy.empty()) same_size(p, copy, "adam");
  const Tier tier = p.tier();
  ZERO_CHECK(g.tier() == tier && m.tier() == tier && v.tier() == tier && (copy.empty() || copy.tier() == tier),
             "adam over spans of both tiers");
  ZERO_CHECK(p.dtype() == Dtype::kF32 && m.dtype() == Dtype::kF32 && v.dtype() == Dtype::kF32, "adam's p, m and v are f32");
  ZERO_CHECK(copy.empty() || is_16bit(copy.dtype()), "adam's copy must be 16-bit");
  // Host tier (offload): the CPU Adam, on the stream's thread, after its GPU work.
  on_tier(s, p, [=] { host_ops::adam(step, segments, run_of(p), run_of(g), run_of(m), run_of(v), run_of(copy)); },
          [=](cudaStream_t cs) {
            for (const Segment& seg : segments) {
              if (seg.param < 0 || seg.numel == 0) continue;
              ZERO_CHECK(seg.offset + seg.numel <= p.size(), "adam segment outside its span");
              const std::size_t o = seg.offset, n = seg.numel;
              void* c = copy.empty() ? nullptr : raw(copy.sub(o, n));
              cuda_adam_step(step, seg.decay, static_cast<float*>(raw(p.sub(o, n))), raw(g.sub(o, n)), g.dtype(),
                             static_cast<float*>(raw(m.sub(o, n))), static_cast<float*>(raw(v.sub(o, n))), c,
                             copy.empty() ? Dtype::kBf16 : copy.dtype(), n, cs);
            }
          });
}

// Lamb runs the CPU Lamb kernel (host_ops), bit-identical to the other devices by construction:
// on host-tier spans in place, on device-tier spans over host copies of them, which are copied
// back (`written`). Correct but not fast: a CUDA Lamb kernel is still to do (README).
void* CudaDevice::allocate(Tier tier, std::size_t bytes, bool zeroed) {
  if (tier == Tier::kHost) {
    void* p = std::aligned_alloc(kHostAlign, round_up(bytes));
    if (p != nullptr && zeroed) std::memset(p, 0, round_up(bytes));
    return p;
  }
  cuda_check(cudaSetDevice(ordinal_), "selecting the GPU");
  void* p = nullptr;
  const cudaError_t rc = cudaMalloc(&p, bytes);
  if (rc == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return nullptr;  // the seam's OutOfMemoryError
  }
  cuda_check(rc, cat("allocating ", format_bytes(bytes), " of GPU memory"));
  if (zeroed) cuda_check(cudaMemset(p, 0, bytes), "zeroing GPU memory");
  return p;
}

void CudaDevice::deallocate(Tier tier, void* p, std::size_t) {
  if (tier == Tier::kHost) {
    std::free(p);
  } else {
    cudaFree(p);  // synchronizes: nothing still running reads it
  }
}

}  // namespace

std::unique_ptr<Device> make_cuda_device(Ledger& ledger) {
  const int ordinal = cuda_device_ordinal();
  cuda_check(cudaSetDevice(ordinal), "selecting the GPU");
  return std::make_unique<CudaDevice>(ledger, ordinal);
}

}  // namespace zero
