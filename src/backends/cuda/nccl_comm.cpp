// The "nccl" transport: one rank per process, each on its GPU, collectives over NCCL on device
// memory (the cuda device's transport addresses). Bootstrapped over MPI: rank 0's ncclUniqueId
// reaches every rank through the mpi communicator's timed all-gather, which also proves every
// rank is there before the (blocking) ncclCommInitRank; the mpi communicator then serves the
// barrier and abort.
//
// The contract of every transport (transport.h), so NCCL's results equal the others' bits:
// reduce_scatter is an all-to-all (grouped ncclSend/ncclRecv) into device scratch followed by
// the rank-order sum kernel (cuda_ops::sum_in_rank_order, comm/reduce.h's order and rounding),
// never ncclReduceScatter, whose order of addition is NCCL's. all_gather and broadcast move bytes.
// In fast mode (communicator.h, "Determinism") reductions are NCCL's own: ncclReduceScatter
// (whose in-place form is ours: recv is this rank's slot of send) and ncclAllReduce, in place.
// Host-memory arguments (all_gather_bytes' start-up checks) are staged through device memory.
//
// Every NCCL call is issued to this communicator's CUDA stream on its comm thread and then
// polled (cudaStreamQuery, ncclCommGetAsyncError) until the communicator's timeout: a dead or stuck peer becomes
// a CommError naming the operation, and the NCCL communicator is aborted (ncclCommAbort) so no
// kernel waits on it forever; later collectives are refused.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "comm/backends.h"
#include "common/error.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_ops.h"
#include "memory/ledger.h"

namespace zero::detail {
namespace {

// Device memory for one collective, accounted as comm_buffers (device tier) if there is a ledger.
class DeviceScratch {
 public:
  DeviceScratch(Ledger* ledger, std::size_t bytes, const char* what) : ledger_(ledger), bytes_(bytes) {
    if (ledger_) ledger_->on_alloc(Tier::kDevice, Category::kCommBuffers, bytes_, what);
    const cudaError_t rc = cudaMalloc(&p_, bytes_ == 0 ? 1 : bytes_);
    if (rc != cudaSuccess) {
      if (ledger_) ledger_->on_free(Tier::kDevice, Category::kCommBuffers, bytes_);
      cudaGetLastError();
      throw OutOfMemoryError(cat("[comm] the GPU refused ", format_bytes(bytes_), " for ", what, ": ", cudaGetErrorString(rc)));
    }
  }
  ~DeviceScratch() {
    cudaFree(p_);
    if (ledger_) ledger_->on_free(Tier::kDevice, Category::kCommBuffers, bytes_);
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  char* data() const { return static_cast<char*>(p_); }

 private:
  Ledger* ledger_;
  std::size_t bytes_;
  void* p_ = nullptr;
};

bool on_host(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return true;
  }
  return a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged;
}

ncclDataType_t nccl_type(Dtype d) {
  switch (d) {
    case Dtype::kF32: return ncclFloat32;
    case Dtype::kBf16: return ncclBfloat16;
    case Dtype::kF16: return ncclFloat16;
  }
  return ncclUint8;
}

// NCCL cannot put two ranks on one GPU (ncclCommInitRank fails with "Duplicate GPU detected"
// after every rank has waited in it): each rank checks first, from every rank's (node, GPU), and
// all of them stop with the same message naming the ranks and the GPU.
void check_one_gpu_per_rank(Communicator& mpi, int ordinal) {
  const std::int32_t mine[2] = {mpi.node(), ordinal};
  std::vector<std::int32_t> all(2 * static_cast<std::size_t>(mpi.size()));
  mpi.all_gather_bytes(mine, sizeof mine, all.data());
  int count = 0;
  cuda_check(cudaGetDeviceCount(&count), "counting GPUs");
  for (int a = 0; a < mpi.size(); ++a) {
    for (int b = a + 1; b < mpi.size(); ++b) {
      if (all[2 * a] == all[2 * b] && all[2 * a + 1] == all[2 * b + 1]) {
        throw ConfigError(cat("[comm] ranks ", a, " and ", b, " run on the same host and would both use its GPU ", all[2 * a + 1], " (of ", count,
                              "): the nccl backend needs a GPU per rank; start at most ", count, " ranks per host (mpirun --map-by ppr:",
                              count, ":node, srun --ntasks-per-node=", count, "), set ZERO_CUDA_DEVICE per rank, or use --comm mpi to share GPUs"));
      }
    }
  }
}

class NcclTransport final : public Transport {
 public:
  static std::unique_ptr<Transport> create(CommOptions options) {
    std::string why;
    if (!cuda_device_present(&why)) {  // before MPI starts: a clear error, once
      throw ConfigError(cat("[comm] the nccl backend needs a CUDA GPU per rank, and this machine has none (", why, "): use --comm mpi"));
    }
    const int ordinal = cuda_device_ordinal();
    auto mpi = std::make_unique<Communicator>(make_mpi_transport(), options);
    check_one_gpu_per_rank(*mpi, ordinal);
    cuda_check(cudaSetDevice(ordinal), "selecting the GPU for nccl");
    ncclUniqueId id{};
    if (mpi->rank() == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::vector<ncclUniqueId> ids(static_cast<std::size_t>(mpi->size()));
    mpi->all_gather_bytes(&id, sizeof(id), ids.data());  // timed: every rank is here, or a CommError
    ncclComm_t comm = nullptr;
    nccl_check(ncclCommInitRank(&comm, mpi->size(), ids[0], mpi->rank()), "ncclCommInitRank");
    return std::unique_ptr<Transport>(new NcclTransport(std::move(mpi), comm, ordinal));
  }

  ~NcclTransport() override {
    if (failure_.empty()) ncclCommDestroy(comm_);
    cudaStreamDestroy(stream_);
  }

  std::string backend() const override { return "nccl"; }
  bool reads_device_memory() const override { return true; }
  [[noreturn]] void abort(int code) override {
    mpi_->abort(code);
    std::_Exit(code);  // (the mpi communicator does not return)
  }

  void reduce_scatter(const void* send, void* recv, std::size_t k, Dtype dtype) override {
    select_gpu();  // the comm thread's current device
    const std::size_t eb = dtype_bytes(dtype), n = static_cast<std::size_t>(size());
    const std::string what = op_label("reduce_scatter", k * eb * n);
    refuse_if_broken(what);
    Staged in(*this, send, n * k * eb, true), out(*this, recv, k * eb, false);
    DeviceScratch pieces(ledger(), n * k * eb, "nccl reduce_scatter scratch");
    nccl_check(ncclGroupStart(), what);
    for (std::size_t r = 0; r < n; ++r) {
      nccl_check(ncclSend(in.device() + r * k * eb, k, nccl_type(dtype), static_cast<int>(r), comm_, stream_), what);
      nccl_check(ncclRecv(pieces.data() + r * k * eb, k, nccl_type(dtype), static_cast<int>(r), comm_, stream_), what);
    }
    nccl_check(ncclGroupEnd(), what);
    cuda_ops::sum_in_rank_order(pieces.data(), size(), k, out.device(), dtype, stream_);
    finish(what);
    out.write_back(stream_);
  }

  bool native_reduction(Dtype) const override { return true; }

  void native_reduce_scatter(const void* send, void* recv, std::size_t k, Dtype dtype) override {
    select_gpu();
    const std::size_t eb = dtype_bytes(dtype), n = static_cast<std::size_t>(size());
    const std::string what = op_label("reduce_scatter", k * eb * n);
    refuse_if_broken(what);
    const bool in_place = send != nullptr && recv == static_cast<const char*>(send) + static_cast<std::size_t>(rank()) * k * eb;
    Staged in(*this, send, n * k * eb, true), out(*this, in_place ? nullptr : recv, k * eb, false);
    char* dst = in_place ? in.device() + static_cast<std::size_t>(rank()) * k * eb : out.device();
    nccl_check(ncclReduceScatter(in.device(), dst, k, nccl_type(dtype), ncclSum, comm_, stream_), what);
    finish(what);
    if (in_place) {
      in.write_back(stream_);  // host memory: the whole buffer, whose other slots it left as they were
    } else {
      out.write_back(stream_);
    }
  }

  void native_all_reduce(void* data, std::size_t count, Dtype dtype) override {
    select_gpu();
    const std::string what = op_label("all_reduce", count * dtype_bytes(dtype));
    refuse_if_broken(what);
    Staged d(*this, data, count * dtype_bytes(dtype), true);
    nccl_check(ncclAllReduce(d.device(), d.device(), count, nccl_type(dtype), ncclSum, comm_, stream_), what);
    finish(what);
    d.write_back(stream_);
  }

  void all_gather(const void* send, void* recv, std::size_t bytes) override {
    select_gpu();  // the comm thread's current device
    const std::string what = op_label("all_gather", bytes * size());
    refuse_if_broken(what);
    Staged out(*this, recv, bytes * size(), false);
    const bool in_place = send == static_cast<const char*>(recv) + static_cast<std::size_t>(rank()) * bytes;
    Staged in(*this, in_place ? nullptr : send, bytes, true);
    const char* src = in_place ? out.device() + static_cast<std::size_t>(rank()) * bytes : in.device();
    if (in_place && out.staged()) copy_local(out.device() + static_cast<std::size_t>(rank()) * bytes, send, bytes);
    nccl_check(ncclAllGather(src, out.device(), bytes, ncclUint8, comm_, stream_), what);
    finish(what);
    out.write_back(stream_);
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    select_gpu();  // the comm thread's current device
    const std::string what = op_label("broadcast", bytes);
    refuse_if_broken(what);
    Staged d(*this, data, bytes, true);
    nccl_check(ncclBroadcast(d.device(), d.device(), bytes, ncclUint8, root, comm_, stream_), what);
    finish(what);
    d.write_back(stream_);
  }

  void barrier() override { mpi_->barrier(); }

  std::uint64_t scratch_bytes(Collective kind, std::size_t k, std::size_t element_bytes) const override {
    return kind == Collective::kReduceScatter ? static_cast<std::uint64_t>(size()) * k * element_bytes : 0;
  }

  void copy_local(void* dst, const void* src, std::size_t bytes) override {
    select_gpu();
    cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), "nccl packing copy");
    cuda_check(cudaStreamSynchronize(stream_), "nccl packing copy");
  }
  std::shared_ptr<void> local_scratch(std::size_t bytes) override {
    select_gpu();
    auto s = std::make_shared<DeviceScratch>(ledger(), bytes, "nccl segment scratch");
    return std::shared_ptr<void>(s, s->data());
  }

 private:
  NcclTransport(std::unique_ptr<Communicator> mpi, ncclComm_t comm, int ordinal)
      : Transport(mpi->rank(), mpi->size()), mpi_(std::move(mpi)), comm_(comm), ordinal_(ordinal) {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating the nccl stream");
    set_topology(mpi_->topology());
  }

  // A collective's argument on the device: the caller's device address, or (host memory) a
  // device copy, read in first if `read` and written back by write_back().
  class Staged {
   public:
    Staged(NcclTransport& c, const void* p, std::size_t bytes, bool read) : p_(const_cast<void*>(p)), bytes_(bytes) {
      if (p == nullptr || !on_host(p)) return;
      scratch_ = std::make_unique<DeviceScratch>(c.ledger(), bytes, "nccl staging of host memory");
      if (read) c.copy_local(scratch_->data(), p, bytes);
    }
    char* device() const { return scratch_ ? scratch_->data() : static_cast<char*>(p_); }
    bool staged() const { return scratch_ != nullptr; }
    void write_back(cudaStream_t s) const {
      if (!scratch_) return;
      cuda_check(cudaMemcpyAsync(p_, scratch_->data(), bytes_, cudaMemcpyDeviceToHost, s), "nccl staging");
      cuda_check(cudaStreamSynchronize(s), "nccl staging");
    }

   private:
    void* p_;
    std::size_t bytes_;
    std::unique_ptr<DeviceScratch> scratch_;
  };

  static void nccl_check(ncclResult_t rc, const std::string& what) {
    if (rc != ncclSuccess && rc != ncclInProgress) throw CommError(cat("[comm] ", what, " failed: ", ncclGetErrorString(rc)));
  }

  void select_gpu() const { cuda_check(cudaSetDevice(ordinal_), "selecting the GPU for nccl"); }

  // Polls the stream until the collective is done, NCCL reports an error, or the deadline.
  void finish(const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    for (int polls = 0;; ++polls) {
      const cudaError_t rc = cudaStreamQuery(stream_);
      if (rc == cudaSuccess) return;
      if (rc != cudaErrorNotReady) fail(cat("[comm] ", what, " on rank ", rank(), " failed on the GPU: ", cudaGetErrorString(rc)));
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        fail(cat("[comm] ", what, " on rank ", rank(), " failed: ", ncclGetErrorString(async)));
      }
      if (std::chrono::steady_clock::now() - start > timeout()) {
        fail(cat("[comm] ", what, " on rank ", rank(), " did not complete within ", timeout().count(),
                 " ms: a rank died, is stuck, or issued a different sequence of collectives"));
      }
      if (polls > 100) std::this_thread::sleep_for(std::chrono::microseconds(polls > 10000 ? 500 : 20));
    }
  }

  [[noreturn]] void fail(std::string message) {
    failure_ = message;
    ncclCommAbort(comm_);  // no kernel of this communicator waits forever
    throw CommError(std::move(message));
  }

  void refuse_if_broken(const std::string& what) const {
    if (!failure_.empty()) {
      throw CommError(cat("[comm] ", what, " on rank ", rank(), " refused: an earlier collective failed (", failure_, "); end the job"));
    }
  }

  std::unique_ptr<Communicator> mpi_;  // bootstrap, barrier, abort
  ncclComm_t comm_;
  int ordinal_;
  cudaStream_t stream_ = nullptr;
  std::string failure_;  // comm thread
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(CommOptions options) {
  return std::make_unique<Communicator>(NcclTransport::create(options), options);
}

}  // namespace zero::detail
