// The "mpi" backend: one rank per process, over Open MPI (so across machines too).
//
// Threads. A process may hold several communicators (split()), each with its own comm thread
// calling MPI, so MPI is initialised with MPI_THREAD_MULTIPLE. Where the library provides only
// MPI_THREAD_SERIALIZED, every MPI call of this process is made under one process-wide mutex
// (MpiLock below), taken for one call at a time and never held across a wait: collectives are
// non-blocking calls polled with MPI_Test, each poll locking on its own, so the collectives of
// two communicators still progress together. The only blocking calls are those that build a
// communicator (MPI_Comm_split, _dup, _split_type and the topology exchange), and in split()
// they run only after every member has shown up in a timed all-gather, so they cannot hang on a
// missing rank; with SERIALIZED MPI, two splits must not run at once on two communicators of one
// process (each would hold the mutex in its blocking call). Below SERIALIZED, zero refuses to
// start: MPI is never called concurrently by accident. ZERO_MPI_THREAD_LEVEL=serialized asks for
// SERIALIZED only (to test the mutex path on a library that provides MULTIPLE).
//
// MPI is initialised by the first communicator of the process (unless someone else did) and
// finalised when the last communicator made from it is gone (MpiSession).
//
// Collectives use the non-blocking MPI calls, polled until a deadline, so a dead or stuck peer
// becomes a CommError naming the operation instead of a hang.
// reduce_scatter and all_gather are point-to-point rounds of zero's own (Isend/Irecv to every peer),
// the reduce-scatter summing each chunk in rank order (the sum every backend shares; MPI's own
// reductions may add in any order, which would break bit-identity) as soon as it has arrived.
// Counts are ints: the communicator cuts collectives into pieces of at most
// max_elements() elements per rank (segmented.cpp), and a byte payload is counted in
// the widest of 8/4/2/1-byte units that divides it, so a piece of floats may hold INT_MAX of them.
//
// A failed collective (timeout or MPI error) leaves its request live: MPI cannot cancel a
// collective, and a late peer can still complete it, writing into its buffers during any later
// MPI call. So after a failure the communicator is *broken*: it keeps the failed collective's
// scratch alive, refuses every later collective without calling MPI, and the process skips
// MPI_Finalize (which would progress the orphan, or wait for peers that are gone). The process
// should end the job with abort(), as the CLI does.
#include <mpi.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "comm/backends.h"
#include "comm/reduce.h"
#include "comm/segmented.h"
#include "common/error.h"
#include "common/handle.h"
#include "memory/ledger.h"

namespace zero::detail {
namespace {

bool g_serialize_mpi = false;        // set once, before any comm thread exists
std::atomic<bool> g_mpi_broken{false};  // a collective of some communicator failed: skip MPI_Finalize

// Held around every MPI call when the library is only SERIALIZED (see the top of this file).
class MpiLock {
 public:
  MpiLock() : lock_(mutex(), std::defer_lock) {
    if (g_serialize_mpi) lock_.lock();
  }

 private:
  static std::mutex& mutex() {
    static std::mutex mu;
    return mu;
  }
  std::unique_lock<std::mutex> lock_;
};

// MPI from MPI_Init (if this process did it) to MPI_Finalize: shared by every communicator.
struct MpiSession {
  bool owns_init = false;
  ~MpiSession() {
    if (owns_init && !g_mpi_broken) MPI_Finalize();
  }
};

std::shared_ptr<MpiSession> mpi_session() {
  static std::mutex mu;  // two threads making communicators at once must not both initialise MPI
  static std::weak_ptr<MpiSession> current;
  std::lock_guard guard(mu);
  if (auto s = current.lock()) return s;
  auto session = std::make_shared<MpiSession>();
  int initialized = 0, finalized = 0, provided = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    throw CommError("[comm] MPI was finalised when the last mpi communicator ended and cannot start again: keep one communicator for the process's lifetime");
  }
  if (!initialized) {
    const char* level = std::getenv("ZERO_MPI_THREAD_LEVEL");
    const bool serialized_only = level && std::strcmp(level, "serialized") == 0;
    MPI_Init_thread(nullptr, nullptr, serialized_only ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE, &provided);
    session->owns_init = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    throw CommError("[comm] this MPI library does not support MPI_THREAD_SERIALIZED, which zero's comm threads need: use an MPI built with thread support (Open MPI is)");
  }
  g_serialize_mpi = provided < MPI_THREAD_MULTIPLE;
  current = session;
  return session;
}

std::string mpi_error_string(int code) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, msg, &len);
  return std::string(msg, len);
}

// The communicator's segmenting keeps every piece within max_elements().
int checked_count(std::size_t n, const std::string& what) {
  ZERO_CHECK(n <= static_cast<std::size_t>(INT_MAX), what, ": a piece of ", n, " exceeds MPI's int count");
  return static_cast<int>(n);
}

// A byte payload as a count of the widest of 8, 4, 2, 1-byte units dividing it.
struct Units {
  MPI_Datatype type;
  std::size_t count;
};
Units units_of(std::size_t bytes) {
  if (bytes % 8 == 0) return {MPI_UINT64_T, bytes / 8};
  if (bytes % 4 == 0) return {MPI_UINT32_T, bytes / 4};
  if (bytes % 2 == 0) return {MPI_UINT16_T, bytes / 2};
  return {MPI_BYTE, bytes};
}

// Which node each rank is on: ranks sharing memory (MPI_COMM_TYPE_SHARED) form a node, known by
// its lowest rank. Blocking; called while a communicator is built.
NodeTopology topology_of(MPI_Comm comm, int rank, int size) {
  MpiLock lock;
  MPI_Comm local;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int leader = rank;  // local rank 0 is the node's lowest rank: the split's key is the rank
  MPI_Bcast(&leader, 1, MPI_INT, 0, local);
  MPI_Comm_free(&local);
  std::vector<int> leaders(size);
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
  return node_topology(rank, leaders);
}

class MpiTransport final : public Transport {
 public:
  static std::unique_ptr<Transport> create() {
    auto session = mpi_session();
    MPI_Comm comm;
    {
      MpiLock lock;
      MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    }
    return adopt(comm, std::move(session));
  }

  ~MpiTransport() override {
    if (!failure_.empty()) return;  // broken: see the top of this file
    MpiLock lock;
    MPI_Comm_free(&comm_);
    MPI_Comm_free(&roll_call_);
  }

  std::string backend() const override { return "mpi"; }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

  // Point-to-point rounds of zero's own (not MPI_Ialltoall): every peer's piece is received in
  // chunks and each chunk is summed in rank order as soon as every peer's part of it has arrived,
  // while the later chunks are on the wire. Receives go into a ring of a few chunks per peer (the
  // scratch, bounded whatever k is: backends.h, mpi_reduce_scatter_ring), the next chunk's receive
  // posted into a slot as soon as its sum is done; the sends are all posted at once, from `send`.
  // This rank's own piece is read where it lies in `send` (recv may be that piece: the sum reads a
  // tile before writing it).
  void reduce_scatter(const void* send, void* recv, std::size_t k, Dtype dtype) override {
    const std::size_t eb = dtype_bytes(dtype);
    const std::string what = op_label("reduce_scatter", k * eb * size());
    refuse_if_broken(what);
    const int n = size();
    const std::size_t peers = static_cast<std::size_t>(n - 1);
    const MpiRing ring = mpi_reduce_scatter_ring(k, eb);
    Scratch scratch;
    char* slots = scratch.allocate(ledger(), ring.slots * peers * ring.chunk * eb);
    // The slot of chunk c's piece from peer j (j != this rank).
    auto slot = [&](std::size_t c, int j) {
      const std::size_t p = static_cast<std::size_t>(j < rank() ? j : j - 1);
      return slots + ((c % ring.slots) * peers + p) * ring.chunk * eb;
    };
    const MPI_Datatype type = dtype == Dtype::kF32 ? MPI_FLOAT : MPI_UINT16_T;  // 16-bit: moved as raw bits
    const char* out = static_cast<const char*>(send);
    auto length = [&](std::size_t c) { return std::min(ring.chunk, k - c * ring.chunk); };
    // requests: chunk c's receives at [c*peers, (c+1)*peers) (null until posted), then every send
    std::vector<MPI_Request> requests(ring.chunks * peers, MPI_REQUEST_NULL);
    auto post_receives = [&](std::size_t c) {
      for (int j = 0, p = 0; j < n; ++j)
        if (j != rank()) requests[c * peers + p++] = post_receive(slot(c, j), length(c), type, j, kReduceScatterTag, what);
    };
    std::vector<const void*> in(n);
    try {
      for (std::size_t c = 0; c < ring.slots; ++c) post_receives(c);
      for (std::size_t c = 0; c < ring.chunks; ++c)
        for (int j = 0; j < n; ++j)
          if (j != rank()) requests.push_back(post_send(out + (j * k + c * ring.chunk) * eb, length(c), type, j, kReduceScatterTag, what));
      for (std::size_t c = 0; c < ring.chunks; ++c) {
        progress_until(requests, c * peers, (c + 1) * peers, what);
        for (int j = 0; j < n; ++j) in[j] = j == rank() ? out + (rank() * k + c * ring.chunk) * eb : slot(c, j);
        sum_in_rank_order(in.data(), n, static_cast<char*>(recv) + c * ring.chunk * eb, length(c), dtype);
        if (c + ring.slots < ring.chunks) post_receives(c + ring.slots);  // into the slot just summed
      }
      progress_until(requests, 0, requests.size(), what);
    } catch (const CommError&) {
      orphans_.push_back(std::move(scratch));  // MPI may still write into it
      throw;
    }
  }

  // Between 2 ranks (backends.h: mpi_exchanges_all_reduce): the whole buffer sent to the peer in
  // chunks, the peer's received into the ring, and each chunk summed in rank order, in place, once
  // the peer's has arrived and this rank's own send of it has completed (MPI lends a send's buffer
  // until then). Every rank computes every sum, the same bits as each rank's slice summed and
  // gathered. Sends go only as far ahead as the receives (the ring's slots): posted all at once,
  // a 16 MiB buffer's 16 sends shared the link (and the peer took the first fragments of those it
  // had no receive for as unexpected messages), so, we think, the first chunk and its sum came
  // later; measured on the two-host link at 16 MiB, alternated on a loaded machine: 0.88-0.98 of
  // MPI's, 0.94-1.02 windowed.
  bool exchanges_all_reduce() const override { return mpi_exchanges_all_reduce(size()); }
  void exchange_all_reduce(void* data, std::size_t k, Dtype dtype) override {
    const std::size_t eb = dtype_bytes(dtype), count = k * static_cast<std::size_t>(size());
    const std::string what = op_label("all_reduce", count * eb);
    refuse_if_broken(what);
    ZERO_CHECK(exchanges_all_reduce(), what, ": the exchange is between 2 ranks, not ", size());
    const int peer = 1 - rank();
    const MpiRing ring = mpi_reduce_scatter_ring(count, eb);
    Scratch scratch;
    char* slots = scratch.allocate(ledger(), ring.slots * ring.chunk * eb);
    auto slot = [&](std::size_t c) { return slots + (c % ring.slots) * ring.chunk * eb; };
    char* mine = static_cast<char*>(data);
    const MPI_Datatype type = dtype == Dtype::kF32 ? MPI_FLOAT : MPI_UINT16_T;  // 16-bit: moved as raw bits
    auto length = [&](std::size_t c) { return std::min(ring.chunk, count - c * ring.chunk); };
    // requests: chunk c's receive at 2c (null until posted), its send at 2c+1
    std::vector<MPI_Request> requests(2 * ring.chunks, MPI_REQUEST_NULL);
    auto post_receive_of = [&](std::size_t c) { requests[2 * c] = post_receive(slot(c), length(c), type, peer, kExchangeTag, what); };
    try {
      auto post_send_of = [&](std::size_t c) {
        requests[2 * c + 1] = post_send(mine + c * ring.chunk * eb, length(c), type, peer, kExchangeTag, what);
      };
      for (std::size_t c = 0; c < ring.slots; ++c) post_receive_of(c), post_send_of(c);
      for (std::size_t c = 0; c < ring.chunks; ++c) {
        progress_until(requests, 2 * c, 2 * c + 2, what);
        char* own = mine + c * ring.chunk * eb;
        const void* in[2] = {rank() == 0 ? own : slot(c), rank() == 0 ? slot(c) : own};
        sum_in_rank_order(in, 2, own, length(c), dtype);
        if (c + ring.slots < ring.chunks) post_receive_of(c + ring.slots), post_send_of(c + ring.slots);  // into the slot just summed
      }
    } catch (const CommError&) {
      orphans_.push_back(std::move(scratch));  // MPI may still write into it
      throw;
    }
  }

  // fast mode (communicator.h, "Determinism"): MPI's own sums, in MPI's order. f32 only: MPI has
  // no bf16/f16 sum, so 16-bit reductions keep the rank-order sum.
  bool native_reduction(Dtype dtype) const override { return mpi_native_reduction(dtype); }

  // MPI_IN_PLACE would leave the sum at the start of send, not in this rank's slot (where the
  // engine's in-place reductions want it): MPI receives into scratch of k floats, copied out.
  void native_reduce_scatter(const void* send, void* recv, std::size_t k, Dtype) override {
    const std::string what = op_label("reduce_scatter", k * sizeof(float) * size());
    refuse_if_broken(what);
    Scratch scratch;
    char* sum = scratch.allocate(ledger(), k * sizeof(float));
    MPI_Request req;
    const int count = checked_count(k, what);
    try {
      check(locked([&] { return MPI_Ireduce_scatter_block(send, sum, count, MPI_FLOAT, MPI_SUM, comm_, &req); }), what);
      wait(req, what);
    } catch (const CommError&) {
      orphans_.push_back(std::move(scratch));  // MPI may still write into it
      throw;
    }
    if (k != 0) std::memcpy(recv, sum, k * sizeof(float));
  }

  bool reference_all_reduce(float* data, std::size_t count) override {
    const std::string what = op_label("reference all_reduce", count * sizeof(float));
    refuse_if_broken(what);
    const int n = checked_count(count, what);
    check(locked([&] { return MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, comm_); }), what);
    return true;
  }

  void native_all_reduce(void* data, std::size_t count, Dtype) override {
    const std::string what = op_label("all_reduce", count * sizeof(float));
    refuse_if_broken(what);
    MPI_Request req;
    const int n = checked_count(count, what);
    check(locked([&] { return MPI_Iallreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, comm_, &req); }), what);
    wait(req, what);
  }

  std::uint64_t native_scratch_bytes(std::size_t k, std::size_t element_bytes) const override {
    return mpi_native_scratch_bytes(k, element_bytes);
  }

  // Point-to-point too: this rank's slice to every peer, every peer's slice straight into place.
  void all_gather(const void* send, void* recv, std::size_t bytes) override {
    const std::string what = op_label("all_gather", bytes * size());
    refuse_if_broken(what);
    char* whole = static_cast<char*>(recv);
    const Units u = units_of(bytes);
    std::vector<MPI_Request> requests;
    for (int j = 0; j < size(); ++j)
      if (j != rank()) requests.push_back(post_receive(whole + j * bytes, u.count, u.type, j, kAllGatherTag, what));
    for (int j = 0; j < size(); ++j)
      if (j != rank()) requests.push_back(post_send(send, u.count, u.type, j, kAllGatherTag, what));
    char* own = whole + static_cast<std::size_t>(rank()) * bytes;
    if (send != own && bytes != 0) std::memmove(own, send, bytes);
    progress_until(requests, 0, requests.size(), what);
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    const std::string what = op_label("broadcast", bytes);
    refuse_if_broken(what);
    MPI_Request req;
    const Units u = units_of(bytes);
    const int count = checked_count(u.count, what);
    check(locked([&] { return MPI_Ibcast(data, count, u.type, root, comm_, &req); }), what);
    wait(req, what);
  }

  void barrier() override {
    const std::string what = op_label("barrier", 0);
    refuse_if_broken(what);
    MPI_Request req;
    check(locked([&] { return MPI_Ibarrier(comm_, &req); }), what);
    wait(req, what);
  }

  std::size_t max_elements(std::size_t element_bytes) const override {
    return mpi_max_transport_elements(element_bytes);
  }

  std::uint64_t scratch_bytes(Collective kind, std::size_t k, std::size_t element_bytes) const override {
    return mpi_transport_scratch_bytes(kind, k, element_bytes, size());
  }

  // Every rank shows up first, in a timed all-gather of (color, key): a missing rank is a
  // CommError here, and the blocking MPI_Comm_split after it cannot hang on one.
  std::unique_ptr<Transport> split(int color, int key) override {
    const std::string what = op_label("split", 0);
    refuse_if_broken(what);
    const int mine[2] = {color, key};
    std::vector<int> all(2 * static_cast<std::size_t>(size()));
    MPI_Request req;
    check(locked([&] { return MPI_Iallgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm_, &req); }), what);
    wait(req, what);
    MPI_Comm child;
    check(locked([&] { return MPI_Comm_split(comm_, color, key, &child); }), what);
    return adopt(child, session_);
  }

 private:
  MpiTransport(MPI_Comm comm, MPI_Comm roll_call, int rank, int size, std::shared_ptr<MpiSession> session)
      : Transport(rank, size), comm_(comm), roll_call_(roll_call), session_(std::move(session)) {}

  // A transport over `comm` (which it then owns), with its roll-call twin and its topology.
  static std::unique_ptr<Transport> adopt(MPI_Comm comm, std::shared_ptr<MpiSession> session) {
    MPI_Comm roll_call;
    int rank = 0, size = 1;
    {
      MpiLock lock;
      MPI_Comm_dup(comm, &roll_call);  // only for naming missing ranks after a timeout
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
      MPI_Comm_set_errhandler(roll_call, MPI_ERRORS_RETURN);
      MPI_Comm_rank(comm, &rank);
      MPI_Comm_size(comm, &size);
    }
    const NodeTopology topology = topology_of(comm, rank, size);
    std::unique_ptr<MpiTransport> c(new MpiTransport(comm, roll_call, rank, size, std::move(session)));
    c->set_topology(topology);
    // The node's ranks and their OpenMP threads within its cores: a spinning wait then takes no
    // core that another rank's threads compute on.
    c->may_spin_ = static_cast<long>(topology.local_size) * std::max(1, omp_get_max_threads()) <= std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
    return c;
  }

  // Runs one MPI call, under the process's MPI mutex if the library is only SERIALIZED.
  static int locked(const std::function<int()>& call) {
    MpiLock lock;
    return call();
  }

  // Scratch of one collective; moved to orphans_ if the collective fails.
  struct Scratch {
    Buffer owned;                    // with a ledger: accounted as comm_buffers
    std::unique_ptr<float[]> unaccounted;  // without one (not zeroed: written before read)
    // `bytes` in whole floats; all of it is received before it is read.
    char* allocate(Ledger* ledger, std::size_t bytes) {
      const std::size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
      if (ledger) {
        owned = Buffer(*ledger, Tier::kDevice, Category::kCommBuffers, floats, "collective scratch", false);
        return reinterpret_cast<char*>(owned.data());
      }
      unaccounted = std::make_unique_for_overwrite<float[]>(floats);
      return reinterpret_cast<char*>(unaccounted.get());
    }
  };

  void check(int rc, const std::string& what) {
    if (rc != MPI_SUCCESS) fail(cat("[comm] ", what, " failed on rank ", rank(), ": ", mpi_error_string(rc)));
  }

  [[noreturn]] void fail(std::string message) {
    failure_ = message;
    g_mpi_broken = true;
    throw CommError(std::move(message));
  }

  void refuse_if_broken(const std::string& what) const {
    if (!failure_.empty()) {
      throw CommError(cat("[comm] ", what, " on rank ", rank(), " refused: an earlier collective failed (", failure_,
                          "), so MPI is in an unknown state; end the job"));
    }
  }

  MPI_Request post_receive(void* into, std::size_t count, MPI_Datatype type, int peer, int tag, const std::string& what) {
    MPI_Request req;
    const int c = checked_count(count, what);
    check(locked([&] { return MPI_Irecv(into, c, type, peer, tag, comm_, &req); }), what);
    return req;
  }
  MPI_Request post_send(const void* from, std::size_t count, MPI_Datatype type, int peer, int tag, const std::string& what) {
    MPI_Request req;
    const int c = checked_count(count, what);
    check(locked([&] { return MPI_Isend(from, c, type, peer, tag, comm_, &req); }), what);
    return req;
  }

  // Polls every request of `requests` (MPI_Testsome, which also moves the others on) until those
  // in [first, last) have completed; completed ones become MPI_REQUEST_NULL.
  void progress_until(std::vector<MPI_Request>& requests, std::size_t first, std::size_t last, const std::string& what) {
    std::vector<int> indices(requests.size());
    auto complete = [&] {
      return std::all_of(requests.begin() + first, requests.begin() + last, [](MPI_Request r) { return r == MPI_REQUEST_NULL; });
    };
    poll_until(what, [&] {
      if (complete()) return Poll{true, false};
      int finished = 0;
      check(locked([&] { return MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &finished, indices.data(), MPI_STATUSES_IGNORE); }), what);
      return Poll{complete(), finished != MPI_UNDEFINED && finished > 0};
    });
  }

  // Polls until done or the deadline.
  void wait(MPI_Request& req, const std::string& what) {
    poll_until(what, [&] {
      int done = 0;
      check(locked([&] { return MPI_Test(&req, &done, MPI_STATUS_IGNORE); }), what);
      return Poll{done != 0, false};
    });
  }

  struct Poll {
    bool done;
    bool progressed;  // a request completed in this poll: bytes are moving
  };

  // Open MPI moves a transfer on only inside MPI calls, so a wait that sleeps between polls
  // stalls the link: each sleep (20 us asked, 60-80 us taken) leaves the socket's buffers full
  // or empty and each rendezvous hand-off waits it out. So the wait polls without sleeping while
  // the bytes are moving (for kSpin after it starts and after each poll that completed a
  // request: a chunk of 1 MiB (backends.h) takes ~1 ms at 1 GB/s, 5 at 0.2) and a thread of this
  // process is blocked on a Handle (its core is idle: polling takes nothing from compute), unless
  // this node's ranks and their OpenMP threads outnumber its cores. Otherwise, after the first
  // 100 polls, it sleeps between polls, so a waiting rank leaves its core to compute, and a peer
  // still computing or far behind costs no core after kSpin.
  template <class Test>
  void poll_until(const std::string& what, Test&& test) {
    const auto start = std::chrono::steady_clock::now();
    auto moved = start;
    for (int polls = 0;; ++polls) {
      const Poll p = test();
      if (p.done) return;
      const auto now = std::chrono::steady_clock::now();
      if (p.progressed) moved = now;
      if (now - start > timeout()) {
        fail(cat("[comm] ", what, " on rank ", rank(), " did not complete within ", timeout().count(), " ms; ",
                 missing_ranks(), ": they died, are stuck, or issued a different sequence of collectives"));
      }
      const bool spin = polls <= 100 || (may_spin_ && g_threads_waiting > 0 && now - moved < kSpin);
      if (!spin) std::this_thread::sleep_for(std::chrono::microseconds(polls > 10000 ? 500 : 20));
    }
  }

  // After a timeout, which ranks are missing? Every rank that times out tells all the others so,
  // then listens, for as long as the timeout, for the others doing the same. A rank that reached
  // a collective within the timeout of this one has timed out too and answers; one that did not
  // (stuck in compute, far behind, or dead) stays silent. MPI itself cannot say who is missing.
  std::string missing_ranks() {
    const int n = size();
    std::vector<bool> heard(n, false);
    heard[rank()] = true;
    for (int r = 0; r < n; ++r) {
      if (r == rank()) continue;
      MPI_Request req;
      MpiLock lock;
      if (MPI_Isend(&roll_call_token_, 1, MPI_INT, r, kRollCallTag, roll_call_, &req) == MPI_SUCCESS) MPI_Request_free(&req);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::min<std::chrono::milliseconds>(timeout(), std::chrono::seconds(10));
    int answered = 1;
    while (answered < n && std::chrono::steady_clock::now() < deadline) {
      int flag = 0;
      MPI_Status status;
      if (locked([&] { return MPI_Iprobe(MPI_ANY_SOURCE, kRollCallTag, roll_call_, &flag, &status); }) != MPI_SUCCESS) break;
      if (!flag) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      int token = 0;
      locked([&] { return MPI_Recv(&token, 1, MPI_INT, status.MPI_SOURCE, kRollCallTag, roll_call_, MPI_STATUS_IGNORE); });
      if (!heard[status.MPI_SOURCE]) heard[status.MPI_SOURCE] = true, ++answered;
    }
    std::string missing;
    for (int r = 0; r < n; ++r)
      if (!heard[r]) missing += cat(missing.empty() ? "" : ", ", r);
    if (missing.empty()) return "every rank is waiting in a collective";
    return cat("missing ranks: ", missing, " (not in a collective within the timeout)");
  }

  static constexpr int kRollCallTag = 7001;
  // The point-to-point rounds' tags on comm_: every rank posts them in the same order, and MPI
  // matches messages of one (peer, tag) in the order they were posted.
  static constexpr int kReduceScatterTag = 7002;
  static constexpr int kAllGatherTag = 7003;
  static constexpr int kExchangeTag = 7004;
  static constexpr std::chrono::milliseconds kSpin{5};
  bool may_spin_ = false;  // this node's ranks x OpenMP threads do not outnumber its cores (set once, in adopt)
  MPI_Comm comm_;
  MPI_Comm roll_call_;
  int roll_call_token_ = 1;  // the payload of a roll-call message (stays valid until MPI sends it)
  std::shared_ptr<MpiSession> session_;  // MPI_Finalize waits for the last communicator
  std::string failure_;          // why the communicator broke; empty while healthy (comm thread)
  std::vector<Scratch> orphans_;  // scratch of failed collectives, which MPI may still write
};

}  // namespace

std::unique_ptr<Transport> make_mpi_transport() { return MpiTransport::create(); }
bool built_with_mpi() { return true; }

}  // namespace zero::detail
