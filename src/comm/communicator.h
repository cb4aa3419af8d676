// Communicator: the collectives the engine needs, over one of several backends.
//
// Backends, chosen by name in make_communicator():
//   "self"    one rank; collectives are copies.
//   "threads" N ranks as threads of one process (ThreadWorld), for fast tests.
//   "mpi"     Open MPI processes, on one machine or many.
//
// Semantics shared by every backend (so that every backend gives the same bits):
//   reduce_scatter(send: N*k, recv: k)  recv[i] = send_0[r*k+i] + send_1[r*k+i] + ... + send_{N-1}[r*k+i]
//                                        summed left to right in rank order, on rank r.
//   all_gather(send: k, recv: N*k)      recv[j*k .. (j+1)*k) = send of rank j. send may alias its slot.
//   all_reduce(data: N*k)               reduce_scatter into this rank's slot, then all_gather.
//   broadcast(data, root)               data = root's data.
// Only fp32 is reduced today. recv of reduce_scatter may be this rank's slot of send (in place).
//
// Threading: every collective, blocking or not, is executed by this communicator's one comm
// thread, in the order it was issued. The *_async forms return a Handle to wait on; the blocking
// forms are async + wait. A failure (timeout, a dead peer, a transport error) surfaces as a
// CommError from Handle::wait().
//
// Traffic: per kind of collective, the payload bytes this rank hands the transport for other
// ranks (sent) and receives from them (received); data that stays on the rank is not counted.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "common/task_queue.h"

namespace zero {

class Ledger;
class Tracer;

enum class Collective : int { kAllReduce = 0, kReduceScatter, kAllGather, kBroadcast, kBarrier };
inline constexpr int kNumCollectives = 5;
const char* collective_name(Collective c);

struct Traffic {
  std::array<std::uint64_t, kNumCollectives> sent{};
  std::array<std::uint64_t, kNumCollectives> received{};
  std::array<std::uint64_t, kNumCollectives> calls{};
  std::uint64_t total_sent() const;
  std::uint64_t total_received() const;
  Traffic operator-(const Traffic& earlier) const;
};

// Completion of an asynchronous collective. wait() rethrows the collective's error, if any.
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

struct CommOptions {
  // A collective that has not completed after this long fails with CommError naming the op.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Communication scratch is accounted here (category comm_buffers, device tier), if set.
  Ledger* ledger = nullptr;
};

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  virtual std::string backend() const = 0;

  Handle all_reduce_async(std::span<float> data);
  Handle reduce_scatter_async(std::span<const float> send, std::span<float> recv);
  Handle all_gather_async(std::span<const float> send, std::span<float> recv);
  Handle broadcast_async(std::span<float> data, int root);
  Handle barrier_async();

  void all_reduce(std::span<float> data) { all_reduce_async(data).wait(); }
  void reduce_scatter(std::span<const float> send, std::span<float> recv) { reduce_scatter_async(send, recv).wait(); }
  void all_gather(std::span<const float> send, std::span<float> recv) { all_gather_async(send, recv).wait(); }
  void broadcast(std::span<float> data, int root) { broadcast_async(data, root).wait(); }
  void barrier() { barrier_async().wait(); }

  // Gathers `bytes` bytes from every rank into recv (size * bytes), rank order. Blocking; for
  // start-up agreement checks, counted as all_gather.
  void all_gather_bytes(const void* send, std::size_t bytes, void* recv);

  // Names what the caller is doing ("step 12"), for the messages of failed collectives.
  void set_context(std::string context);
  // Records every collective's execution on the communication lane, if set (before issuing any).
  void set_tracer(Tracer* tracer) { tracer_ = tracer; }

  Traffic traffic() const;
  const CommOptions& options() const { return options_; }

  // Ends every rank of the job after an unrecoverable error (MPI_Abort under MPI). Never returns.
  [[noreturn]] virtual void abort(int code);

 protected:
  Communicator(int rank, int size, CommOptions options);

  // The transport: run on the comm thread, one at a time, in issue order. Byte counts are raw.
  virtual void do_reduce_scatter(const float* send, float* recv, std::size_t k) = 0;
  virtual void do_all_gather(const void* send, void* recv, std::size_t bytes_per_rank) = 0;
  virtual void do_broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual void do_barrier() = 0;

  // Must be called by the most-derived destructor: stops the comm thread before the transport dies.
  void stop_comm_thread();

  std::string context() const;
  // Names the collective for messages: "reduce_scatter of 4.0 KiB (step 3)"; inside an all_reduce,
  // "all_reduce (reduce_scatter phase) of 4.0 KiB (step 3)", so the user sees what they issued.
  std::string op_label(const char* op, std::size_t bytes) const;

 private:
  Handle enqueue(Collective kind, std::uint64_t sent, std::uint64_t received, std::function<void()> op);
  void count(Collective kind, std::uint64_t sent, std::uint64_t received);

  int rank_;
  int size_;
  CommOptions options_;
  // The comm thread. Collectives must be issued in the same order on every rank; one thread per
  // rank executing them in issue order keeps that order even when compute overlaps them.
  std::unique_ptr<TaskQueue> worker_;
  std::array<std::atomic<std::uint64_t>, kNumCollectives> sent_{};
  std::array<std::atomic<std::uint64_t>, kNumCollectives> received_{};
  std::array<std::atomic<std::uint64_t>, kNumCollectives> calls_{};
  Collective running_ = Collective::kBarrier;  // what the comm thread runs now; comm thread only
  Tracer* tracer_ = nullptr;
  mutable std::mutex context_mu_;
  std::string context_;
};

// The one factory. `name` is "self", "threads" or "mpi". For "threads", use ThreadWorld instead
// (N communicators share one world); make_communicator("threads") is an error that says so.
std::unique_ptr<Communicator> make_communicator(const std::string& name, CommOptions options = {});

// True if this process was started by mpirun/mpiexec (Open MPI, MPICH or PMIx environment);
// *size receives the job's process count.
bool launched_by_mpi(int* size);

}  // namespace zero
