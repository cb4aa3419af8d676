#include "comm/communicator.h"

#include <cstdlib>

#include "common/error.h"
#include "common/trace.h"
#include "memory/ledger.h"

namespace zero {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "all_reduce";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kAllGather: return "all_gather";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kBarrier: return "barrier";
  }
  return "?";
}

std::uint64_t Traffic::total_sent() const {
  std::uint64_t s = 0;
  for (auto b : sent) s += b;
  return s;
}

std::uint64_t Traffic::total_received() const {
  std::uint64_t s = 0;
  for (auto b : received) s += b;
  return s;
}

Traffic Traffic::operator-(const Traffic& earlier) const {
  Traffic d;
  for (int i = 0; i < kNumCollectives; ++i) {
    d.sent[i] = sent[i] - earlier.sent[i];
    d.received[i] = received[i] - earlier.received[i];
    d.calls[i] = calls[i] - earlier.calls[i];
  }
  return d;
}

Communicator::Communicator(int rank, int size, CommOptions options)
    : rank_(rank), size_(size), options_(options), worker_(std::make_unique<TaskQueue>()) {}

Communicator::~Communicator() { stop_comm_thread(); }

void Communicator::stop_comm_thread() {
  if (worker_) worker_->stop();
}

void Communicator::abort(int code) { std::_Exit(code); }

void Communicator::set_context(std::string context) {
  std::lock_guard lock(context_mu_);
  context_ = std::move(context);
}

std::string Communicator::context() const {
  std::lock_guard lock(context_mu_);
  return context_;
}

std::string Communicator::op_label(const char* op, std::size_t bytes) const {
  std::string c = context();
  const std::string name = running_ == Collective::kAllReduce ? cat("all_reduce (", op, " phase)") : std::string(op);
  return cat(name, " of ", format_bytes(bytes), c.empty() ? "" : " (", c, c.empty() ? "" : ")");
}

void Communicator::count(Collective kind, std::uint64_t sent, std::uint64_t received) {
  const int k = static_cast<int>(kind);
  sent_[k] += sent;
  received_[k] += received;
  calls_[k] += 1;
}

Traffic Communicator::traffic() const {
  Traffic t;
  for (int i = 0; i < kNumCollectives; ++i) {
    t.sent[i] = sent_[i].load();
    t.received[i] = received_[i].load();
    t.calls[i] = calls_[i].load();
  }
  return t;
}

Handle Communicator::enqueue(Collective kind, std::uint64_t sent, std::uint64_t received,
                             std::function<void()> op) {
  // Counted when issued, so that a step's traffic includes the gathers it leaves running into
  // the next forward (a collective that then fails ends the run anyway).
  count(kind, sent, received);
  return Handle(worker_->push([this, kind, op = std::move(op)] {
    running_ = kind;
    TraceSpan span(tracer_, Lane::kComm, collective_name(kind));
    op();
  }));
}

// Traffic of the bandwidth-optimal algorithms: each rank sends the N-1 pieces that belong to
// others (reduce_scatter) or its own piece to N-1 others (all_gather), and receives as much.
Handle Communicator::reduce_scatter_async(std::span<const float> send, std::span<float> recv) {
  const std::size_t n = static_cast<std::size_t>(size_);
  ZERO_CHECK(send.size() == recv.size() * n, "reduce_scatter: send has ", send.size(),
             " elements, recv ", recv.size(), ", world ", n);
  const std::uint64_t bytes = recv.size() * sizeof(float) * (n - 1);
  return enqueue(Collective::kReduceScatter, bytes, bytes,
                 [this, send, recv] { do_reduce_scatter(send.data(), recv.data(), recv.size()); });
}

Handle Communicator::all_gather_async(std::span<const float> send, std::span<float> recv) {
  const std::size_t n = static_cast<std::size_t>(size_);
  ZERO_CHECK(recv.size() == send.size() * n, "all_gather: send has ", send.size(),
             " elements, recv ", recv.size(), ", world ", n);
  const std::uint64_t bytes = send.size() * sizeof(float) * (n - 1);
  return enqueue(Collective::kAllGather, bytes, bytes,
                 [this, send, recv] { do_all_gather(send.data(), recv.data(), send.size() * sizeof(float)); });
}

Handle Communicator::all_reduce_async(std::span<float> data) {
  const std::size_t n = static_cast<std::size_t>(size_);
  ZERO_CHECK(data.size() % n == 0, "all_reduce of ", data.size(), " elements: pad to a multiple of the world size ", n);
  const std::size_t k = data.size() / n;
  const std::uint64_t bytes = 2 * k * sizeof(float) * (n - 1);
  return enqueue(Collective::kAllReduce, bytes, bytes, [this, data, k] {
    float* mine = data.data() + static_cast<std::size_t>(rank_) * k;
    do_reduce_scatter(data.data(), mine, k);  // in place into this rank's slot
    do_all_gather(mine, data.data(), k * sizeof(float));
  });
}

Handle Communicator::broadcast_async(std::span<float> data, int root) {
  ZERO_CHECK(root >= 0 && root < size_, "broadcast root ", root, " outside the world of ", size_);
  const std::uint64_t bytes = data.size_bytes();
  const std::uint64_t sent = rank_ == root ? bytes * static_cast<std::uint64_t>(size_ - 1) : 0;
  const std::uint64_t received = rank_ == root ? 0 : bytes;
  return enqueue(Collective::kBroadcast, sent, received,
                 [this, data, root] { do_broadcast(data.data(), data.size_bytes(), root); });
}

Handle Communicator::barrier_async() {
  return enqueue(Collective::kBarrier, 0, 0, [this] { do_barrier(); });
}

void Communicator::all_gather_bytes(const void* send, std::size_t bytes, void* recv) {
  const std::uint64_t b = bytes * static_cast<std::uint64_t>(size_ - 1);
  enqueue(Collective::kAllGather, b, b, [this, send, bytes, recv] { do_all_gather(send, recv, bytes); }).wait();
}

bool launched_by_mpi(int* size) {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {  // Open MPI; MPICH and Intel MPI
    if (const char* v = std::getenv(var)) {
      if (size) *size = std::atoi(v);
      return true;
    }
  }
  return false;
}

}  // namespace zero
