// Transport: what a backend must do to move bytes between the ranks of one group, and nothing
// more. zero's own decisions about collectives (segments, rank-order sums across pieces, the
// order check, the comm thread and its queue, traffic counting, determinism) live once, above
// it, in Communicator (communicator.h). A backend (self, threads, MPI, NCCL, the planner's
// counting one) is one Transport subclass in one file.
//
// Every call below runs on its communicator's one comm thread, one at a time, in the order the
// ranks issued their collectives, with at most max_elements() elements per rank; sizes are raw
// (the communicator has already cut a collective into pieces). A call that cannot complete
// (timeout, a dead peer, a transport error) throws CommError; its message names the operation
// through op_label(), which says what the user issued ("all_reduce (reduce_scatter phase) of
// 4.0 KiB, piece 2 of 3 (step 3)").
//
//   reduce_scatter(send: N*k, recv: k)  recv[i] = sum over ranks j, in rank order, of send_j[r*k+i]
//                                       (comm/reduce.h: 16-bit elements widen, add in f32, round once)
//   all_gather(send, recv, b)           recv[j*b .. (j+1)*b) = rank j's b bytes; send may alias its slot
//   broadcast(data, b, root)            data = root's b bytes
//   barrier()                           returns once every rank has called it
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zero/dtype.h"

namespace zero {

class Ledger;

enum class Collective : int { kAllReduce = 0, kReduceScatter, kAllGather, kBroadcast, kBarrier };
inline constexpr int kNumCollectives = 5;
const char* collective_name(Collective c);

// Where the ranks of a group run: which machine ("node") and which of its ranks.
struct NodeTopology {
  int local_rank = 0;  // this rank's index among the ranks on its node, in rank order
  int local_size = 1;  // ranks on this node
  int node = 0;        // nodes numbered by the lowest rank on each, in rank order
  int num_nodes = 1;
  std::vector<int> node_of;  // (group size) the node of every rank of the group; empty: all on `node`
  // Ranks of the group other than this one on another node than this one's: the peers a
  // collective's bytes to "every other rank" cross a node boundary to.
  int peers_across() const;
  bool across(int peer) const { return !node_of.empty() && node_of.at(peer) != node; }
};

// What a transport may ask of the communicator above it while one of its calls runs.
class TransportHost {
 public:
  virtual ~TransportHost() = default;
  virtual std::string op_label(const char* op, std::size_t bytes) const = 0;  // see the top of this file
  virtual std::chrono::milliseconds timeout() const = 0;  // how long a call may wait for its peers
  virtual Ledger* ledger() const = 0;  // where scratch is accounted (comm_buffers, device tier), or null
};

class Transport {
 public:
  virtual ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const NodeTopology& topology() const { return topology_; }
  virtual std::string backend() const = 0;

  // The four collectives (see the top of this file).
  virtual void reduce_scatter(const void* send, void* recv, std::size_t k, Dtype dtype) = 0;
  virtual void all_gather(const void* send, void* recv, std::size_t bytes_per_rank) = 0;
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // The transport of the ranks that pass the same color, ranked by key, ties by rank
  // (MPI_Comm_split); collective. The default refuses (CommError).
  virtual std::unique_ptr<Transport> split(int color, int key);
  // The transport of `members` (ranks of this group, in their new order; this rank among them),
  // where every rank passes the list of its own new group and the lists partition the group.
  // The default is split(members[0], this rank's index in members); a transport that runs no
  // peers (the planner's counting one) builds the group from the list alone.
  virtual std::unique_ptr<Transport> split_members(const std::vector<int>& members);

  // The most elements of `element_bytes` bytes one call may carry per rank (MPI: what an int count
  // allows); the default is no limit.
  virtual std::size_t max_elements(std::size_t element_bytes) const;
  // Scratch the transport allocates (comm_buffers) for one call of `kind` (kReduceScatter,
  // kAllGather or kBroadcast) of k elements per rank of `element_bytes` bytes; the default is none.
  virtual std::uint64_t scratch_bytes(Collective kind, std::size_t k, std::size_t element_bytes) const;

  // The transport's own reductions, for the communicator's fast mode: true where it has them for
  // `dtype`. native_reduce_scatter: k elements per rank, recv may be this rank's slot of send;
  // native_all_reduce: count elements in place; both add in the library's order.
  // native_scratch_bytes: what native_reduce_scatter allocates for one call. Defaults: none.
  virtual bool native_reduction(Dtype dtype) const;
  virtual void native_reduce_scatter(const void* send, void* recv, std::size_t k, Dtype dtype);
  virtual void native_all_reduce(void* data, std::size_t count, Dtype dtype);
  virtual std::uint64_t native_scratch_bytes(std::size_t k, std::size_t element_bytes) const;

  // A deterministic all-reduce of the transport's own, where it has a faster one than the
  // communicator's reduce_scatter then all_gather: in place on data (N*k elements), the same sums
  // (each element over the ranks in rank order, comm/reduce.h) and the same bytes to every peer.
  // exchanges_all_reduce() says whether it has one; scratch_bytes(kAllReduce, k, ...) is its
  // scratch. The defaults: none (exchange_all_reduce refuses).
  virtual bool exchanges_all_reduce() const { return false; }
  virtual void exchange_all_reduce(void* data, std::size_t k, Dtype dtype);

  // The library's own blocking all-reduce (f32 sum, in place) on the calling thread, with nothing of
  // zero's in between: the reference `zero bench comm --reference` times zero's against on the
  // same link in the same process. False (nothing done) where the transport has none.
  virtual bool reference_all_reduce(float* data, std::size_t count);

  // The memory the transport reads and writes: true for GPU memory (nccl); how the communicator's
  // packing copies bytes within it, and where its packing scratch lives (nullptr: an accounted
  // host buffer). The defaults are host memory and memcpy.
  virtual bool reads_device_memory() const { return false; }
  virtual void copy_local(void* dst, const void* src, std::size_t bytes);
  virtual std::shared_ptr<void> local_scratch(std::size_t bytes);

  // False for a transport that only counts (the planner's dry run): the communicator counts its
  // collectives when issued and never runs them.
  virtual bool executes() const { return true; }

  // Ends every rank of the job after an unrecoverable error (MPI_Abort under MPI). Never returns.
  [[noreturn]] virtual void abort(int code);

  // Called once by the communicator that owns this transport, before any call.
  void attach(const TransportHost* host) { host_ = host; }

 protected:
  Transport(int rank, int size);
  // For a transport that knows more than "every rank on one node".
  void set_topology(const NodeTopology& topology) { topology_ = topology; }
  // What the owning communicator says (TransportHost); usable inside the calls above.
  std::string op_label(const char* op, std::size_t bytes) const;
  std::chrono::milliseconds timeout() const;
  Ledger* ledger() const;

 private:
  int rank_;
  int size_;
  NodeTopology topology_;
  const TransportHost* host_ = nullptr;
};

}  // namespace zero
