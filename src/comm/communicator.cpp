#include "comm/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

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
    d.pieces[i] = pieces[i] - earlier.pieces[i];
  }
  return d;
}

Communicator::Communicator(int rank, int size, CommOptions options)
    : rank_(rank),
      size_(size),
      options_(options),
      timeout_ms_(options.timeout.count()),
      topology_{rank, size, 0, 1},  // one node until the backend knows better
      worker_(std::make_unique<TaskQueue>()) {}

Communicator::~Communicator() { stop_comm_thread(); }

void Communicator::stop_comm_thread() {
  if (worker_) worker_->stop();
}

void Communicator::abort(int code) { std::_Exit(code); }

CommOptions Communicator::options() const {
  CommOptions o = options_;
  o.timeout = timeout();
  return o;
}

void Communicator::set_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    throw ConfigError(cat("[comm] a collective timeout must be positive, not ", timeout.count(), " ms"));
  }
  timeout_ms_ = timeout.count();
}

std::size_t Communicator::max_transport_elements(std::size_t) const { return static_cast<std::size_t>(-1); }

std::uint64_t Communicator::transport_scratch_bytes(Collective, std::size_t) const { return 0; }

std::unique_ptr<Communicator> Communicator::do_split(int, int) {
  throw CommError(cat("[comm] the '", backend(), "' backend cannot split a communicator: use threads, mpi or self"));
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  ZERO_CHECK(color >= 0, "split: color ", color, " must be >= 0");
  std::unique_ptr<Communicator> child;
  // On the comm thread, in issue order: a split is collective, like the collectives around it.
  Handle(worker_->push([&] {
    running_ = Collective::kBarrier;
    TraceSpan span(tracer_, Lane::kComm, "split");
    child = do_split(color, key);
  })).wait();
  return child;
}

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
  const std::string piece = piece_count_ > 1 ? cat(", piece ", piece_index_ + 1, " of ", piece_count_) : "";
  return cat(name, " of ", format_bytes(bytes), piece, c.empty() ? "" : " (", c, c.empty() ? "" : ")");
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
    t.pieces[i] = pieces_[i].load();
  }
  return t;
}

Handle Communicator::enqueue(Collective kind, std::uint64_t sent, std::uint64_t received,
                             std::function<void()> op) {
  // Counted when issued, so that a step's traffic includes the gathers it leaves running into
  // the next forward (a collective that then fails ends the run anyway).
  count(kind, sent, received);
  if (!executes()) return Handle();  // counted, never run: complete at once
  return Handle(worker_->push([this, kind, op = std::move(op)] {
    running_ = kind;
    TraceSpan span(tracer_, Lane::kComm, collective_name(kind));
    op();
  }));
}

std::size_t Communicator::resolve_segment(std::size_t segment, std::size_t element_bytes) const {
  const std::size_t s = segment != 0 ? segment : options_.segment_elements;
  const std::size_t limit = max_transport_elements(element_bytes);
  return s == 0 || s > limit ? limit : s;
}

std::size_t Communicator::segment_elements(std::size_t segment) const { return resolve_segment(segment, sizeof(float)); }

// Traffic of the bandwidth-optimal algorithms: each rank sends the N-1 pieces that belong to
// others (reduce_scatter) or its own piece to N-1 others (all_gather), and receives as much.
// Segmenting changes how many transport calls carry them, not the bytes.
Handle Communicator::reduce_scatter_async(std::span<const float> send, std::span<float> recv) {
  return reduce_scatter_async(send, recv, 0);
}

Handle Communicator::reduce_scatter_async(std::span<const float> send, std::span<float> recv, std::size_t segment) {
  const std::size_t n = static_cast<std::size_t>(size_);
  ZERO_CHECK(send.size() == recv.size() * n, "reduce_scatter: send has ", send.size(),
             " elements, recv ", recv.size(), ", world ", n);
  const std::uint64_t bytes = recv.size() * sizeof(float) * (n - 1);
  const std::size_t s = resolve_segment(segment, sizeof(float));
  return enqueue(Collective::kReduceScatter, bytes, bytes, [this, send, recv, s] {
    run_pieces([&](Scratch& scratch) { segmented_reduce_scatter(send.data(), recv.data(), recv.size(), s, scratch); });
  });
}

Handle Communicator::all_gather_async(std::span<const float> send, std::span<float> recv) {
  return all_gather_async(send, recv, 0);
}

Handle Communicator::all_gather_async(std::span<const float> send, std::span<float> recv, std::size_t segment) {
  const std::size_t n = static_cast<std::size_t>(size_);
  ZERO_CHECK(recv.size() == send.size() * n, "all_gather: send has ", send.size(),
             " elements, recv ", recv.size(), ", world ", n);
  const std::uint64_t bytes = send.size() * sizeof(float) * (n - 1);
  const std::size_t s = resolve_segment(segment, sizeof(float));
  return enqueue(Collective::kAllGather, bytes, bytes, [this, send, recv, s] {
    run_pieces([&](Scratch& scratch) {
      segmented_all_gather(send.data(), recv.data(), send.size(), sizeof(float), s, scratch);
    });
  });
}

Handle Communicator::all_reduce_async(std::span<float> data) { return all_reduce_async(data, 0); }

Handle Communicator::all_reduce_async(std::span<float> data, std::size_t segment) {
  const std::size_t n = static_cast<std::size_t>(size_);
  ZERO_CHECK(data.size() % n == 0, "all_reduce of ", data.size(), " elements: pad to a multiple of the world size ", n);
  const std::size_t k = data.size() / n;
  const std::uint64_t bytes = 2 * k * sizeof(float) * (n - 1);
  const std::size_t s = resolve_segment(segment, sizeof(float));
  return enqueue(Collective::kAllReduce, bytes, bytes, [this, data, k, s] {
    run_pieces([&](Scratch& scratch) {
      float* mine = data.data() + static_cast<std::size_t>(rank_) * k;
      segmented_reduce_scatter(data.data(), mine, k, s, scratch);  // in place into this rank's slot
      segmented_all_gather(mine, data.data(), k, sizeof(float), s, scratch);
    });
  });
}

Handle Communicator::broadcast_async(std::span<float> data, int root) { return broadcast_async(data, root, 0); }

Handle Communicator::broadcast_async(std::span<float> data, int root, std::size_t segment) {
  ZERO_CHECK(root >= 0 && root < size_, "broadcast root ", root, " outside the world of ", size_);
  const std::uint64_t bytes = data.size_bytes();
  const std::uint64_t sent = rank_ == root ? bytes * static_cast<std::uint64_t>(size_ - 1) : 0;
  const std::uint64_t received = rank_ == root ? 0 : bytes;
  const std::size_t s = resolve_segment(segment, sizeof(float));
  return enqueue(Collective::kBroadcast, sent, received, [this, data, root, s] {
    run_pieces([&](Scratch&) { segmented_broadcast(data.data(), data.size(), sizeof(float), s, root); });
  });
}

Handle Communicator::barrier_async() {
  return enqueue(Collective::kBarrier, 0, 0, [this] {
    begin_piece(Collective::kBarrier, 0, 1);
    do_barrier();
  });
}

// Records are gathered as bytes: an element here is one byte, so a segment counts bytes.
void Communicator::all_gather_bytes(const void* send, std::size_t bytes, void* recv) {
  const std::uint64_t b = bytes * static_cast<std::uint64_t>(size_ - 1);
  const std::size_t s = resolve_segment(0, 1);
  if (!executes()) {  // every rank of a dry run describes the same thing: this one
    for (int r = 0; r < size_; ++r) std::memcpy(static_cast<char*>(recv) + static_cast<std::size_t>(r) * bytes, send, bytes);
  }
  enqueue(Collective::kAllGather, b, b, [this, send, bytes, recv, s] {
    run_pieces([&](Scratch& scratch) { segmented_all_gather(send, recv, bytes, 1, s, scratch); });
  }).wait();
}

NodeTopology node_topology(int rank, std::span<const int> node_leader) {
  ZERO_CHECK(rank >= 0 && static_cast<std::size_t>(rank) < node_leader.size(), "rank ", rank, " outside ", node_leader.size());
  const int mine = node_leader[rank];
  NodeTopology t{0, 0, 0, 0};
  std::vector<int> leaders;
  for (std::size_t r = 0; r < node_leader.size(); ++r) {
    if (node_leader[r] == mine) {
      t.local_size += 1;
      if (static_cast<int>(r) < rank) t.local_rank += 1;
    }
    if (std::find(leaders.begin(), leaders.end(), node_leader[r]) == leaders.end()) leaders.push_back(node_leader[r]);
  }
  std::sort(leaders.begin(), leaders.end());
  t.node = static_cast<int>(std::lower_bound(leaders.begin(), leaders.end(), mine) - leaders.begin());
  t.num_nodes = static_cast<int>(leaders.size());
  return t;
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
