// The cuda device's streams (see cuda_device.h).
#include <exception>
#include <future>
#include <memory>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_device.h"

namespace zero {
namespace {

class CudaStreamBase : public Stream {
 public:
  explicit CudaStreamBase(int ordinal) : ordinal_(ordinal) {
    cuda_check(cudaSetDevice(ordinal), "selecting the GPU");
    // Blocking (the default flags): ordered after the legacy stream's memsets and frees.
    cuda_check(cudaStreamCreate(&stream_), "creating a CUDA stream");
  }
  ~CudaStreamBase() override { cudaStreamDestroy(stream_); }
  cudaStream_t handle() const { return stream_; }

 protected:
  // An event recorded on the stream now; waiting on it waits for the GPU to get there.
  std::shared_future<void> event_now() {
    cudaEvent_t ev = nullptr;
    cuda_check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "creating a CUDA event");
    std::shared_ptr<CUevent_st> owned(ev, [](cudaEvent_t e) { cudaEventDestroy(e); });
    cuda_check(cudaEventRecord(ev, stream_), "recording a CUDA event");
    return std::async(std::launch::deferred, [owned] { cuda_check(cudaEventSynchronize(owned.get()), "a stream's work"); }).share();
  }
  int ordinal_;
  cudaStream_t stream_ = nullptr;
};

// The compute stream: operations are issued from the caller's thread; their failure to issue is
// the caller's exception (as the CPU's inline stream), a kernel's failure surfaces at the event.
class CudaComputeStream final : public CudaStreamBase {
 public:
  using CudaStreamBase::CudaStreamBase;
  void run(std::function<void()> op) override { op(); }
  Handle record() override { return Handle(event_now()); }
  void wait(const Handle& event) override { event.wait(); }
};

// The copy and host streams: the seam's thread stream (make_thread_stream), whose thread selects
// the GPU first and, at each record(), waits for this CUDA stream, so the event is the GPU's too.
class CudaThreadStream final : public CudaStreamBase {
 public:
  explicit CudaThreadStream(int ordinal)
      : CudaStreamBase(ordinal),
        thread_(make_thread_stream([ordinal] { cuda_check(cudaSetDevice(ordinal), "selecting the GPU on a stream thread"); },
                                   [s = stream_] { cuda_check(cudaStreamSynchronize(s), "a stream's work"); })) {}
  void run(std::function<void()> op) override { thread_->run(std::move(op)); }
  Handle record() override { return thread_->record(); }
  void wait(const Handle& event) override { thread_->wait(event); }

 private:
  std::unique_ptr<Stream> thread_;  // joined before the CUDA stream goes
};

}  // namespace

cudaStream_t cuda_stream(Stream& s) {
  auto* c = dynamic_cast<CudaStreamBase*>(&s);
  ZERO_CHECK(c != nullptr, "a CUDA stream expected (an operation of the cuda device on another device's stream)");
  return c->handle();
}

std::unique_ptr<Stream> make_cuda_compute_stream(int ordinal) { return std::make_unique<CudaComputeStream>(ordinal); }
std::unique_ptr<Stream> make_cuda_thread_stream(int ordinal) { return std::make_unique<CudaThreadStream>(ordinal); }

bool cuda_device_present(std::string* why) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    if (why) *why = cat("cudaGetDeviceCount: ", cudaGetErrorString(rc));
    cudaGetLastError();
    return false;
  }
  if (count == 0) {
    if (why) *why = "cudaGetDeviceCount found none";
    return false;
  }
  return true;
}

}  // namespace zero
