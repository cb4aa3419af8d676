#include "comm/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "comm/segmented.h"
#include "common/error.h"
#include "common/task_queue.h"
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

const char* determinism_name(Determinism d) { return d == Determinism::kFast ? "fast" : "deterministic"; }

Determinism parse_determinism(const std::string& value, const std::string& what) {
  if (value == "deterministic") return Determinism::kDeterministic;
  if (value == "fast") return Determinism::kFast;
  throw ConfigError(cat("[comm] ", what, " is '", value, "'; it must be deterministic (rank-order sums, the same bits on "
                        "every backend and stage) or fast (the transport's own reductions)"));
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

std::uint64_t Traffic::total_sent_across() const {
  std::uint64_t s = 0;
  for (auto b : sent_across) s += b;
  return s;
}

Traffic Traffic::operator+(const Traffic& other) const {
  Traffic d;
  for (int i = 0; i < kNumCollectives; ++i) {
    d.sent[i] = sent[i] + other.sent[i];
    d.received[i] = received[i] + other.received[i];
    d.sent_across[i] = sent_across[i] + other.sent_across[i];
    d.received_across[i] = received_across[i] + other.received_across[i];
    d.calls[i] = calls[i] + other.calls[i];
    d.pieces[i] = pieces[i] + other.pieces[i];
  }
  return d;
}

Traffic Traffic::operator-(const Traffic& earlier) const {
  Traffic d;
  for (int i = 0; i < kNumCollectives; ++i) {
    d.sent[i] = sent[i] - earlier.sent[i];
    d.received[i] = received[i] - earlier.received[i];
    d.sent_across[i] = sent_across[i] - earlier.sent_across[i];
    d.received_across[i] = received_across[i] - earlier.received_across[i];
    d.calls[i] = calls[i] - earlier.calls[i];
    d.pieces[i] = pieces[i] - earlier.pieces[i];
  }
  return d;
}

Communicator::Communicator(std::unique_ptr<Transport> transport, CommOptions options)
    : transport_(std::move(transport)),
      rank_(transport_->rank()),
      size_(transport_->size()),
      options_(options),
      timeout_ms_(options.timeout.count()),
      determinism_(static_cast<int>(options.determinism)),
      topology_(transport_->topology()),
      worker_(std::make_unique<TaskQueue>()) {
  transport_->attach(this);
}

// The comm thread stops (running what was queued) before the transport it calls is destroyed.
Communicator::~Communicator() { stop_comm_thread(); }

void Communicator::stop_comm_thread() {
  if (worker_) worker_->stop();
}

void Communicator::abort(int code) {
  transport_->abort(code);
  std::_Exit(code);  // (a transport's abort does not return)
}

CommOptions Communicator::options() const {
  CommOptions o = options_;
  o.timeout = timeout();
  o.determinism = determinism();
  return o;
}

void Communicator::set_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    throw ConfigError(cat("[comm] a collective timeout must be positive, not ", timeout.count(), " ms"));
  }
  timeout_ms_ = timeout.count();
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  ZERO_CHECK(color >= 0, "split: color ", color, " must be >= 0");
  std::unique_ptr<Transport> child;
  CollectiveRecord record("split", 0, 0);
  record.label = CollectiveLabel::current();
  record.context = context();
  const bool checked = determinism() == Determinism::kDeterministic;
  // On the comm thread, in issue order: a split is collective, like the collectives around it.
  Handle(worker_->push([&] {
    running_ = Collective::kBarrier;
    TraceSpan span(tracer_, Lane::kComm, "split");
    if (checked) check_order(record);
    child = transport_->split(color, key);
  })).wait();
  return std::make_unique<Communicator>(std::move(child), options());
}

std::unique_ptr<Communicator> Communicator::split_members(const std::vector<int>& members) {
  ZERO_CHECK(std::find(members.begin(), members.end(), rank_) != members.end(), "split_members: rank ", rank_, " not among the members");
  std::unique_ptr<Transport> child;
  CollectiveRecord record("split", members.size(), 0);
  record.label = CollectiveLabel::current();
  record.context = context();
  const bool checked = determinism() == Determinism::kDeterministic && transport_->executes();
  Handle(worker_->push([&] {
    running_ = Collective::kBarrier;
    TraceSpan span(tracer_, Lane::kComm, "split");
    if (checked) check_order(record);
    child = transport_->split_members(members);
  })).wait();
  return std::make_unique<Communicator>(std::move(child), options());
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
  if (checking_) return cat("order check before ", checking_->describe());  // its context included
  const bool phase = running_ == Collective::kAllReduce && std::string_view(op) != "all_reduce";  // not fast mode's one call
  const std::string name = phase ? cat("all_reduce (", op, " phase)") : std::string(op);
  const std::string piece = piece_count_ > 1 ? cat(", piece ", piece_index_ + 1, " of ", piece_count_) : "";
  return cat(name, " of ", format_bytes(bytes), piece, c.empty() ? "" : " (", c, c.empty() ? "" : ")");
}

void Communicator::count(Collective kind, const LinkBytes& bytes) {
  const int k = static_cast<int>(kind);
  sent_[k] += bytes.sent;
  received_[k] += bytes.received;
  sent_across_[k] += bytes.sent_across;
  received_across_[k] += bytes.received_across;
  calls_[k] += 1;
}

// The algorithms of every transport here exchange with each peer directly: a reduce-scatter
// sends each peer its slice of k elements (point-to-point sends under MPI, the threads backend's reads of the
// peers' slots) and sums what arrives locally in rank order; an all-gather sends this rank's
// slice to each peer; an all-reduce is both. So each of the n-1 peers gets `per_peer` bytes, and
// the bytes to (and from) peers on another node cross a node boundary.
Communicator::LinkBytes Communicator::to_every_peer(std::uint64_t per_peer) const {
  const std::uint64_t peers = static_cast<std::uint64_t>(size_ - 1);
  const std::uint64_t across = static_cast<std::uint64_t>(topology_.peers_across());
  return {per_peer * peers, per_peer * peers, per_peer * across, per_peer * across};
}

Traffic Communicator::traffic() const {
  Traffic t;
  for (int i = 0; i < kNumCollectives; ++i) {
    t.sent[i] = sent_[i].load();
    t.received[i] = received_[i].load();
    t.sent_across[i] = sent_across_[i].load();
    t.received_across[i] = received_across_[i].load();
    t.calls[i] = calls_[i].load();
    t.pieces[i] = pieces_[i].load();
  }
  return t;
}

namespace {

// The record with its piece count: ceil(k / s) for k elements per rank (default: its elements).
CollectiveRecord with_pieces(CollectiveRecord record, std::size_t s, std::size_t k = 0) {
  record.pieces = split_into_pieces(k ? k : record.elements, s).count;
  return record;
}

}  // namespace

Handle Communicator::enqueue(CollectiveRecord record, Collective kind, const LinkBytes& bytes, std::function<void()> op) {
  // Counted when issued, so that a step's traffic includes the gathers it leaves running into
  // the next forward (a collective that then fails ends the run anyway).
  count(kind, bytes);
  if (!transport_->executes()) return Handle();  // counted, never run: complete at once
  record.label = CollectiveLabel::current();
  record.context = context();
  const bool checked = determinism() == Determinism::kDeterministic;
  return Handle(worker_->push([this, kind, checked, record = std::move(record), op = std::move(op)] {
    running_ = kind;
    TraceSpan span(tracer_, Lane::kComm, collective_name(kind));
    if (checked) check_order(record);
    op();
  }));
}

std::size_t Communicator::resolve_segment(std::size_t segment, std::size_t element_bytes) const {
  const std::size_t s = segment != 0 ? segment : options_.segment_elements;
  const std::size_t limit = transport_->max_elements(element_bytes);
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
  ZERO_CHECK(send.size() == recv.size() * static_cast<std::size_t>(size_), "reduce_scatter: send has ", send.size(),
             " elements, recv ", recv.size(), ", world ", size_);
  return reduce_scatter_async(send.data(), recv.data(), recv.size(), Dtype::kF32, segment);
}

Handle Communicator::reduce_scatter_async(const void* send, void* recv, std::size_t k, Dtype dtype, std::size_t segment) {
  const std::size_t s = resolve_segment(segment, dtype_bytes(dtype));
  const bool transport_sums = native(dtype);
  return enqueue(with_pieces({"reduce_scatter", k, static_cast<std::uint32_t>(dtype_bytes(dtype))}, s), Collective::kReduceScatter,
                 to_every_peer(k * dtype_bytes(dtype)), [=, this] {
    run_pieces([&](Scratch& scratch) { segmented_reduce_scatter(send, recv, k, dtype, s, scratch, transport_sums); });
  });
}

Handle Communicator::all_gather_async(std::span<const float> send, std::span<float> recv) {
  return all_gather_async(send, recv, 0);
}

Handle Communicator::all_gather_async(std::span<const float> send, std::span<float> recv, std::size_t segment) {
  ZERO_CHECK(recv.size() == send.size() * static_cast<std::size_t>(size_), "all_gather: send has ", send.size(),
             " elements, recv ", recv.size(), ", world ", size_);
  return all_gather_async(send.data(), recv.data(), send.size(), Dtype::kF32, segment);
}

Handle Communicator::all_gather_async(const void* send, void* recv, std::size_t k, Dtype dtype, std::size_t segment) {
  const std::size_t eb = dtype_bytes(dtype);
  const std::size_t s = resolve_segment(segment, eb);
  return enqueue(with_pieces({"all_gather", k, static_cast<std::uint32_t>(eb)}, s), Collective::kAllGather, to_every_peer(k * eb),
                 [this, send, recv, k, eb, s] {
    run_pieces([&](Scratch& scratch) { segmented_all_gather(send, recv, k, eb, s, scratch); });
  });
}

Handle Communicator::all_reduce_async(std::span<float> data) { return all_reduce_async(data, 0); }

Handle Communicator::all_reduce_async(std::span<float> data, std::size_t segment) {
  return all_reduce_async(data.data(), data.size(), Dtype::kF32, segment);
}

Handle Communicator::all_reduce_async(void* data, std::size_t count, Dtype dtype, std::size_t segment) {
  const std::size_t n = static_cast<std::size_t>(size_);
  ZERO_CHECK(count % n == 0, "all_reduce of ", count, " elements: pad to a multiple of the world size ", n);
  const std::size_t k = count / n;
  const std::size_t eb = dtype_bytes(dtype);
  const std::size_t s = resolve_segment(segment, eb);
  const bool transport_sums = native(dtype);
  // Its reduce-scatter phase, then its all-gather phase: k elements to every peer in each.
  return enqueue(with_pieces({"all_reduce", count, static_cast<std::uint32_t>(eb)}, s, k), Collective::kAllReduce, to_every_peer(2 * k * eb),
                 [=, this] {
    if (transport_sums) return segmented_native_all_reduce(data, count, dtype, s);
    run_pieces([&](Scratch& scratch) {
      if (k <= s && transport_->exchanges_all_reduce()) {  // one piece, in the transport's own all-reduce
        begin_piece(Collective::kAllReduce, 0, 1);
        return transport_->exchange_all_reduce(data, k, dtype);
      }
      char* mine = static_cast<char*>(data) + static_cast<std::size_t>(rank_) * k * eb;
      segmented_reduce_scatter(data, mine, k, dtype, s, scratch);  // in place into this rank's slot
      segmented_all_gather(mine, data, k, eb, s, scratch);
    });
  });
}

Handle Communicator::broadcast_async(std::span<float> data, int root) { return broadcast_async(data, root, 0); }

Handle Communicator::broadcast_async(std::span<float> data, int root, std::size_t segment) {
  ZERO_CHECK(root >= 0 && root < size_, "broadcast root ", root, " outside the world of ", size_);
  const std::uint64_t bytes = data.size_bytes();
  // The root sends the data to every peer; the others receive it from the root.
  LinkBytes link;
  if (rank_ == root) {
    link = to_every_peer(bytes);
    link.received = link.received_across = 0;
  } else {
    link.received = bytes;
    link.received_across = topology_.across(root) ? bytes : 0;
  }
  const std::size_t s = resolve_segment(segment, sizeof(float));
  return enqueue(with_pieces({"broadcast", data.size(), sizeof(float), root}, s), Collective::kBroadcast, link, [this, data, root, s] {
    run_pieces([&](Scratch&) { segmented_broadcast(data.data(), data.size(), sizeof(float), s, root); });
  });
}

Handle Communicator::barrier_async() {
  return enqueue({"barrier", 0, 0}, Collective::kBarrier, {}, [this] {
    begin_piece(Collective::kBarrier, 0, 1);
    transport_->barrier();
  });
}

// Records are gathered as bytes: an element here is one byte, so a segment counts bytes.
void Communicator::all_gather_bytes(const void* send, std::size_t bytes, void* recv) {
  const std::size_t s = resolve_segment(0, 1);
  if (!transport_->executes()) {  // every rank of a dry run describes the same thing: this one
    for (int r = 0; r < size_; ++r) std::memcpy(static_cast<char*>(recv) + static_cast<std::size_t>(r) * bytes, send, bytes);
  }
  all_gather_bytes_async(send, bytes, recv, s).wait();
}

Handle Communicator::all_gather_bytes_async(const void* send, std::size_t bytes, void* recv, std::size_t segment) {
  const std::size_t s = resolve_segment(segment, 1);
  return enqueue(with_pieces({"all_gather", bytes, 1}, s), Collective::kAllGather, to_every_peer(bytes), [this, send, bytes, recv, s] {
    run_pieces([&](Scratch& scratch) { segmented_all_gather(send, recv, bytes, 1, s, scratch); });
  });
}

NodeTopology node_topology(int rank, std::span<const int> node_leader) {
  ZERO_CHECK(rank >= 0 && static_cast<std::size_t>(rank) < node_leader.size(), "rank ", rank, " outside ", node_leader.size());
  const int mine = node_leader[rank];
  NodeTopology t{0, 0, 0, 0, {}};
  for (std::size_t r = 0; r < node_leader.size(); ++r) {
    if (node_leader[r] == mine) {
      t.local_size += 1;
      if (static_cast<int>(r) < rank) t.local_rank += 1;
    }
  }
  std::vector<int> leaders(node_leader.begin(), node_leader.end());  // sorted, once each (the planner's worlds are large)
  std::sort(leaders.begin(), leaders.end());
  leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());
  const auto node_index = [&](int leader) { return static_cast<int>(std::lower_bound(leaders.begin(), leaders.end(), leader) - leaders.begin()); };
  t.node = node_index(mine);
  t.num_nodes = static_cast<int>(leaders.size());
  for (int leader : node_leader) t.node_of.push_back(node_index(leader));
  return t;
}

NodeTopology block_topology(int rank, int size, int ranks_per_node) {
  if (ranks_per_node < 1) throw ConfigError(cat("[comm] ranks per node must be at least 1, not ", ranks_per_node));
  std::vector<int> leaders(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) leaders[r] = r / ranks_per_node * ranks_per_node;
  return node_topology(rank, leaders);
}

bool launched_by_mpi(int* size) {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {  // Open MPI's mpirun; MPICH, Intel MPI, srun --mpi=pmi2
    if (const char* v = std::getenv(var)) {
      if (size) *size = std::atoi(v);
      return true;
    }
  }
  // Slurm's srun --mpi=pmix starts each rank itself: PMIx names the rank, Slurm the step's size.
  const char* step_tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  if (std::getenv("PMIX_RANK") && step_tasks) {
    if (size) *size = std::atoi(step_tasks);
    return true;
  }
  return false;
}

}  // namespace zero
