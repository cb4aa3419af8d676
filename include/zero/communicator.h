// Communicator: the collectives the engine needs, over one backend's Transport (transport.h).
//
// The communicator is one class: it decides everything below (segments, rank-order sums, the
// order check, the comm thread, traffic, determinism) once, for every backend. A backend is a
// Transport that only moves bytes. Transports, chosen by name in make_communicator():
//   "self"    one rank; collectives are copies (self_comm.cpp).
//   "threads" N ranks as threads of one process (ThreadWorld, thread_world.cpp), for fast tests.
//   "mpi"     Open MPI processes, on one machine or many (mpi_comm.cpp).
// and a device backend's own (its folder under src/backends/), and the planner's counting one
// (counting_comm.cpp).
//
// Semantics shared by every backend (so that every backend gives the same bits):
//   reduce_scatter(send: N*k, recv: k)  recv[i] = send_0[r*k+i] + send_1[r*k+i] + ... + send_{N-1}[r*k+i]
//                                        summed left to right in rank order, on rank r.
//   all_gather(send: k, recv: N*k)      recv[j*k .. (j+1)*k) = send of rank j. send may alias its slot.
//   all_reduce(data: N*k)               reduce_scatter into this rank's slot, then all_gather.
//   broadcast(data, root)               data = root's data.
// Elements are f32, bf16 or f16 (dtype.h): a 16-bit reduction widens every element, adds
// in f32 in rank order and rounds once, so 16-bit collectives are as deterministic as f32 ones
// and move half the bytes. recv of reduce_scatter may be this rank's slot of send (in place).
//
// Segments: a collective of k elements per rank runs as ceil(k/s) transport calls ("pieces") of at
// most s elements per rank each (segmented.cpp), so no transport call exceeds what the backend
// can carry (MPI: an int count) and backend scratch is bounded by s, not k. s is the per-call
// `segment` if non-zero, else CommOptions::segment_elements if non-zero, else the backend's own
// limit, and never more than that limit. Segmenting never changes the bits: each element is
// still summed in rank order. A reduce_scatter/all_gather of more than one piece packs the pieces
// of every rank into scratch of N*s elements (comm_buffers); scratch_bytes() predicts it.
//
// Threading: every collective, blocking or not, is executed by this communicator's one comm
// thread, in the order it was issued. The *_async forms return a Handle to wait on; the blocking
// forms are async + wait. A failure (timeout, a dead peer, a transport error) surfaces as a
// CommError from Handle::wait().
//
// Traffic: per kind of collective, the payload bytes this rank hands the transport for other
// ranks (sent) and receives from them (received); data that stays on the rank is not counted.
// By link: every transport's algorithm exchanges with each peer directly (reduce-scatter: each
// peer's slice to that peer, then a local rank-order sum; all-gather: this rank's slice to each
// peer; all-reduce: both; broadcast: the root to each peer), so the bytes to and from each peer
// are known, and those to a peer on another node (the topology: MPI's shared-memory split, or
// ThreadWorld's ranks per node) are counted as across-node (sent_across, received_across). Under
// MPI the library may route an all-gather through other ranks (a ring); the counters then say
// what zero's algorithm hands each peer, not the path the library's packets take.
// `calls` counts collectives as issued (one per call); `pieces` counts the transport calls they
// ran as (an all_reduce of m pieces is 2m: m reduce_scatter pieces, then m all_gather pieces).
//
// Order check (order_check.h): before its transport runs, every collective (and split) is
// compared across the ranks by a running hash of what each has executed (operation, size, root,
// the issuing thread's CollectiveLabel, the context); ranks that issued different collectives
// fail together with a CommError naming what each issued, instead of mismatched transport calls.
//
// Determinism (CommOptions::determinism, set_determinism): everything above is `deterministic`,
// the default. `fast` hands reductions to the transport's own reduce-scatter and all-reduce where
// it has them (MPI_Reduce_scatter_block and MPI_Allreduce for f32; ncclReduceScatter and
// ncclAllReduce), which add in the library's order, and skips the order check (one tiny
// all_gather per collective): sums may then differ in the last bits between rank counts, stages
// and backends, and ranks that issue different collectives are caught by the timeout (or the
// threads backend's rendezvous check) instead. Traffic counts the same bytes in both modes.
// Where a transport has no native reduction (self, threads, 16-bit elements on MPI) fast mode
// sums in rank order as deterministic mode does.
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
#include <vector>

#include "comm/order_check.h"
#include "comm/transport.h"
#include "zero/dtype.h"
#include "common/handle.h"

namespace zero {

class Ledger;
class TaskQueue;
class Tracer;

struct Traffic {
  std::array<std::uint64_t, kNumCollectives> sent{};
  std::array<std::uint64_t, kNumCollectives> received{};
  // Of sent and received, the bytes exchanged with peers on another node (see "Traffic" above);
  // the rest stayed inside this rank's node.
  std::array<std::uint64_t, kNumCollectives> sent_across{};
  std::array<std::uint64_t, kNumCollectives> received_across{};
  std::array<std::uint64_t, kNumCollectives> calls{};
  std::array<std::uint64_t, kNumCollectives> pieces{};
  std::uint64_t total_sent() const;
  std::uint64_t total_received() const;
  std::uint64_t total_sent_across() const;
  std::uint64_t total_sent_inside() const { return total_sent() - total_sent_across(); }
  Traffic operator-(const Traffic& earlier) const;
  Traffic operator+(const Traffic& other) const;  // two communicators' traffic together
};

// How reductions add; see "Determinism" above.
enum class Determinism : int { kDeterministic = 0, kFast };
const char* determinism_name(Determinism d);  // "deterministic", "fast"
// "deterministic" or "fast"; otherwise a ConfigError naming `what` (e.g. "--determinism").
Determinism parse_determinism(const std::string& value, const std::string& what);

struct CommOptions {
  // A collective that has not completed after this long fails with CommError naming the op.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Communication scratch is accounted here (category comm_buffers, device tier), if set.
  Ledger* ledger = nullptr;
  // Elements per rank in one transport call of a collective (see "Segments" above); 0 = the
  // backend's own limit. A per-call `segment` overrides it.
  std::size_t segment_elements = 0;
  // deterministic (rank-order sums, order check) or fast (the transport's own reductions).
  Determinism determinism = Determinism::kDeterministic;
};

class Communicator final : private TransportHost {
 public:
  // Owns `transport` and attaches itself to it; starts the comm thread.
  Communicator(std::unique_ptr<Transport> transport, CommOptions options = {});
  ~Communicator() override;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::string backend() const { return transport_->backend(); }

  // The node this rank runs on (MPI: ranks sharing memory; threads and self: one node).
  int local_rank() const { return topology_.local_rank; }
  int local_size() const { return topology_.local_size; }
  int node() const { return topology_.node; }
  int num_nodes() const { return topology_.num_nodes; }
  const NodeTopology& topology() const { return topology_; }

  // A communicator of the same backend over the ranks that pass the same `color` (>= 0), ranked
  // by `key`, ties by rank (MPI_Comm_split). Collective over this communicator: every rank calls
  // it, in the same order among its collectives. The new one has its own comm thread, so its
  // collectives run concurrently with this one's; it takes this one's options (timeout, ledger,
  // segment) and may outlive it.
  std::unique_ptr<Communicator> split(int color, int key);
  // split() given the new group itself: `members`, the ranks of this rank's new communicator in
  // their new order, where the lists of all ranks partition this communicator (hybrid sharding's
  // groups of consecutive ranks and its replica groups). Also works on the planner's counting
  // communicator, which cannot learn the other ranks' colors.
  std::unique_ptr<Communicator> split_members(const std::vector<int>& members);

  // `segment` (elements per rank per transport call, 0 = the options' default) overloads: see
  // "Segments" above. The engine passes its bucket size here.
  Handle all_reduce_async(std::span<float> data);
  Handle all_reduce_async(std::span<float> data, std::size_t segment);
  Handle reduce_scatter_async(std::span<const float> send, std::span<float> recv);
  Handle reduce_scatter_async(std::span<const float> send, std::span<float> recv, std::size_t segment);
  Handle all_gather_async(std::span<const float> send, std::span<float> recv);
  Handle all_gather_async(std::span<const float> send, std::span<float> recv, std::size_t segment);
  Handle broadcast_async(std::span<float> data, int root);
  Handle broadcast_async(std::span<float> data, int root, std::size_t segment);
  Handle barrier_async();
  // Typed forms on raw buffers of `dtype` elements: k elements per rank (all_reduce: n in all).
  Handle reduce_scatter_async(const void* send, void* recv, std::size_t k, Dtype dtype, std::size_t segment);
  Handle all_gather_async(const void* send, void* recv, std::size_t k, Dtype dtype, std::size_t segment);
  Handle all_reduce_async(void* data, std::size_t n, Dtype dtype, std::size_t segment);

  void all_reduce(std::span<float> data) { all_reduce_async(data).wait(); }
  void reduce_scatter(std::span<const float> send, std::span<float> recv) { reduce_scatter_async(send, recv).wait(); }
  void all_gather(std::span<const float> send, std::span<float> recv) { all_gather_async(send, recv).wait(); }
  void broadcast(std::span<float> data, int root) { broadcast_async(data, root).wait(); }
  void barrier() { barrier_async().wait(); }
  void all_reduce(std::span<float> data, std::size_t segment) { all_reduce_async(data, segment).wait(); }
  void reduce_scatter(std::span<const float> send, std::span<float> recv, std::size_t segment) {
    reduce_scatter_async(send, recv, segment).wait();
  }
  void all_gather(std::span<const float> send, std::span<float> recv, std::size_t segment) {
    all_gather_async(send, recv, segment).wait();
  }
  void broadcast(std::span<float> data, int root, std::size_t segment) { broadcast_async(data, root, segment).wait(); }

  // Gathers `bytes` bytes from every rank into recv (size * bytes), rank order. Blocking; for
  // start-up agreement checks, counted as all_gather.
  void all_gather_bytes(const void* send, std::size_t bytes, void* recv);
  // The same, asynchronous: `bytes` bytes from every rank into recv (size * bytes), in pieces of
  // at most `segment` bytes per rank (0: the options' default); packed payloads (ZeRO++'s int8
  // weights with their scales) whose bytes the traffic counts as they are.
  Handle all_gather_bytes_async(const void* send, std::size_t bytes, void* recv, std::size_t segment);

  // The s (elements per rank per piece) a float collective issued with `segment` runs with:
  // `segment`, else CommOptions::segment_elements, else the backend's limit; never above the limit.
  std::size_t segment_elements(std::size_t segment = 0) const;
  // The comm_buffers bytes (device tier) a collective of k elements per rank (all_reduce: of
  // N*k elements; broadcast: of k) will hold at its peak under `segment`: the packing scratch of
  // segmented.cpp plus the backend's own scratch for one piece. The ledger's comm_buffers peak
  // during that collective rises by exactly this. 0 for barrier.
  std::uint64_t scratch_bytes(Collective kind, std::size_t k, std::size_t segment = 0, Dtype dtype = Dtype::kF32) const;

  // Names what the caller is doing ("step 12"), for the messages of failed collectives. The order
  // check compares it too, so a thread that issues for another sets the context that one had.
  void set_context(std::string context);
  std::string context() const;
  // Records every collective's execution on the communication lane, if set (before issuing any).
  void set_tracer(Tracer* tracer) { tracer_ = tracer; }

  Traffic traffic() const;
  // A copy: the timeout may change (set_timeout) while collectives run.
  CommOptions options() const;
  std::chrono::milliseconds timeout() const override { return std::chrono::milliseconds(timeout_ms_.load()); }
  // Sets the collective timeout (CommOptions::timeout) for collectives that start from now on;
  // ConfigError unless positive.
  void set_timeout(std::chrono::milliseconds timeout);
  // The determinism of collectives issued from now on. Every rank must set the same, at the same
  // point among its collectives (before the first, as the CLI does).
  Determinism determinism() const { return static_cast<Determinism>(determinism_.load()); }
  void set_determinism(Determinism determinism) { determinism_ = static_cast<int>(determinism); }

  // True for a backend whose transport reads and writes GPU memory (nccl).
  bool reads_device_memory() const { return transport_->reads_device_memory(); }
  // A one-piece deterministic all-reduce runs as the transport's own exchange (transport.h).
  bool exchanges_all_reduce() const { return transport_->exchanges_all_reduce(); }
  // The backend library's own all-reduce of `data` (MPI_Allreduce), for benchmarks only: called on
  // this thread while no collective of this communicator is outstanding. False where there is none.
  bool reference_all_reduce(std::span<float> data) { return transport_->reference_all_reduce(data.data(), data.size()); }

  // Ends every rank of the job after an unrecoverable error (MPI_Abort under MPI). Never returns.
  [[noreturn]] void abort(int code);

 private:
  class Scratch;  // segmented.cpp: packing scratch of one collective
  // TransportHost, for the transport's messages and scratch.
  // Names the collective for messages: "reduce_scatter of 4.0 KiB (step 3)"; inside an all_reduce,
  // "all_reduce (reduce_scatter phase) of 4.0 KiB (step 3)", so the user sees what they issued;
  // with pieces, "reduce_scatter of 4.0 KiB, piece 2 of 3 (step 3)".
  std::string op_label(const char* op, std::size_t bytes) const override;
  Ledger* ledger() const override { return options_.ledger; }
  void stop_comm_thread();
  // `record` (op and size; the label and context are filled in here) is checked on the comm
  // thread before `op` runs (check_order).
  // In fast mode the check is skipped (decided at issue, so a collective keeps its mode).
  // What one collective of this rank hands its peers and gets from them, by link.
  struct LinkBytes {
    std::uint64_t sent = 0, received = 0, sent_across = 0, received_across = 0;
  };
  LinkBytes to_every_peer(std::uint64_t per_peer) const;  // per_peer bytes to and from each other rank
  Handle enqueue(CollectiveRecord record, Collective kind, const LinkBytes& bytes, std::function<void()> op);
  // Fast mode with a native reduction for `dtype`: the transport reduces (decided at issue).
  bool native(Dtype dtype) const { return determinism() == Determinism::kFast && transport_->native_reduction(dtype); }
  // order_check.cpp: folds `record` into order_ and compares the ranks' hashes; comm thread only.
  void check_order(const CollectiveRecord& record);
  void count(Collective kind, const LinkBytes& bytes);
  std::size_t resolve_segment(std::size_t segment, std::size_t element_bytes) const;
  // segmented.cpp: the piece loops, run on the comm thread; s = elements per rank per piece.
  void segmented_reduce_scatter(const void* send, void* recv, std::size_t k, Dtype dtype, std::size_t s, Scratch& scratch,
                                bool native = false);
  // fast mode's all_reduce: the transport's own, on contiguous runs of at most N*s elements.
  void segmented_native_all_reduce(void* data, std::size_t count, Dtype dtype, std::size_t s);
  void segmented_all_gather(const void* send, void* recv, std::size_t k, std::size_t element_bytes, std::size_t s,
                            Scratch& scratch);
  void segmented_broadcast(void* data, std::size_t k, std::size_t element_bytes, std::size_t s, int root);
  // Runs body with this collective's scratch; keeps the scratch alive if the body fails.
  void run_pieces(const std::function<void(Scratch&)>& body);
  void begin_piece(Collective kind, std::size_t index, std::size_t count);

  std::unique_ptr<Transport> transport_;  // the backend; called on the comm thread only
  int rank_;
  int size_;
  CommOptions options_;
  std::atomic<std::int64_t> timeout_ms_;  // options_.timeout, settable while collectives run
  std::atomic<int> determinism_;          // options_.determinism, settable (Determinism)
  NodeTopology topology_;                 // the transport's, at construction
  // The comm thread. Collectives must be issued in the same order on every rank; one thread per
  // rank executing them in issue order keeps that order even when compute overlaps them.
  std::unique_ptr<TaskQueue> worker_;
  std::array<std::atomic<std::uint64_t>, kNumCollectives> sent_{};
  std::array<std::atomic<std::uint64_t>, kNumCollectives> received_{};
  std::array<std::atomic<std::uint64_t>, kNumCollectives> sent_across_{};
  std::array<std::atomic<std::uint64_t>, kNumCollectives> received_across_{};
  std::array<std::atomic<std::uint64_t>, kNumCollectives> calls_{};
  std::array<std::atomic<std::uint64_t>, kNumCollectives> pieces_{};
  Collective running_ = Collective::kBarrier;  // what the comm thread runs now; comm thread only
  std::size_t piece_index_ = 0, piece_count_ = 1;  // the piece it runs now; comm thread only
  // Scratch of collectives that failed: a transport (MPI) may still write into it. Comm thread only.
  std::vector<std::shared_ptr<void>> orphaned_scratch_;
  OrderHash order_;                  // of the collectives executed so far; comm thread only
  const CollectiveRecord* checking_ = nullptr;  // whose order check runs now (for op_label); comm thread only
  std::string diverged_;             // the order check's error, once the ranks disagreed; comm thread only
  Tracer* tracer_ = nullptr;
  mutable std::mutex context_mu_;
  std::string context_;
};

// The topology of `rank` given, for every rank r, node_leader[r]: the lowest rank on r's node.
NodeTopology node_topology(int rank, std::span<const int> node_leader);

// The one factory. `name` is "self", "threads" or "mpi". For "threads", use ThreadWorld instead
// (N communicators share one world); make_communicator("threads") is an error that says so.
std::unique_ptr<Communicator> make_communicator(const std::string& name, CommOptions options = {});

// The planner's dry run: rank 0 of `size` ranks whose collectives are counted (traffic, calls)
// and never run, so the engine's schedule can be run without peers or memory. Its segment limits
// and scratch_bytes() are the MPI backend's if `like_mpi`, else those of the threads backend.
// `ranks_per_node`: the ranks of the world in nodes of that many consecutive ranks (0: one node),
// for the traffic's across-node bytes.
std::unique_ptr<Communicator> make_counting_communicator(int size, bool like_mpi, CommOptions options = {}, int ranks_per_node = 0);
// The topology of `rank` in a world of `size` ranks arranged as nodes of `ranks_per_node`
// consecutive ranks (the last may hold fewer); ConfigError unless ranks_per_node >= 1.
NodeTopology block_topology(int rank, int size, int ranks_per_node);

// True if this process was started by mpirun/mpiexec (Open MPI, MPICH or PMIx environment);
// *size receives the job's process count.
bool launched_by_mpi(int* size);

}  // namespace zero
