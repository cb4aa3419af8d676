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
  // chunks of kChunkBytes, all posted at once, and each chunk is summed in rank order as soon as
  // every peer's part of it has arrived, while the later chunks are still on the wire. This rank's
  // own piece is read where it lies in `send` (recv may be that piece: the sum reads a tile before
  // writing it).
  void reduce_scatter(const void* send, void* recv, std::size_t k, Dtype dtype) override {
    const std::size_t eb = dtype_bytes(dtype);
    const std::string what = op_label("reduce_scatter", k * eb * size());
    refuse_if_broken(what);
    const int n = size();
    // pieces[j] = rank j's piece for this rank: (size, k) elements of dtype, comm scratch (whole floats)
    Scratch scratch;
    char* pieces = scratch.allocate(ledger(), static_cast<std::size_t>(n) * k * eb);
    const MPI_Datatype type = dtype == Dtype::kF32 ? MPI_FLOAT : MPI_UINT16_T;  // 16-bit: moved as raw bits
    const char* out = static_cast<const char*>(send);
    const std::size_t chunk = std::max<std::size_t>(1, kChunkBytes / eb);
    const std::size_t chunks = k == 0 ? 0 : (k - 1) / chunk + 1;
    // requests: every chunk's receives, chunk by chunk ((n-1) each), then every send
    std::vector<MPI_Request> requests;
    std::vector<const void*> in(n);
    try {
      for_each_piece(k, chunk, [&](std::size_t at, std::size_t len) {
        for (int j = 0; j < n; ++j)
          if (j != rank()) requests.push_back(post_receive(pieces + (j * k + at) * eb, len, type, j, kReduceScatterTag, what));
      });
      for_each_piece(k, chunk, [&](std::size_t at, std::size_t len) {
        for (int j = 0; j < n; ++j)
          if (j != rank()) requests.push_back(post_send(out + (j * k + at) * eb, len, type, j, kReduceScatterTag, what));
      });
      const std::size_t peers = static_cast<std::size_t>(n - 1);
      for (std::size_t c = 0; c < chunks; ++c) {
        const std::size_t at = c * chunk, len = std::min(chunk, k - at);
        progress_until(requests, c * peers, (c + 1) * peers, what);
        for (int j = 0; j < n; ++j) in[j] = (j == rank() ? out + rank() * k * eb : pieces + j * k * eb) + at * eb;
        sum_in_rank_order(in.data(), n, static_cast<char*>(recv) + at * eb, len, dtype);
      }
      progress_until(requests, 0, requests.size(), what);
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
    c->may_spin_ = topology.local_size <= std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
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
    std::vector<float> unaccounted;  // without one
    // `bytes` in whole floats; all of it is received before it is read.
    char* allocate(Ledger* ledger, std::size_t bytes) {
      const std::size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
      if (ledger) {
        owned = Buffer(*ledger, Tier::kDevice, Category::kCommBuffers, floats, "reduce_scatter scratch", false);
        return reinterpret_cast<char*>(owned.data());
      }
      unaccounted.resize(floats);
      return reinterpret_cast<char*>(unaccounted.data());
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

  // Calls f(offset, length) for each chunk of k elements, in order.
  template <class F>
  static void for_each_piece(std::size_t k, std::size_t chunk, F&& f) {
    for (std::size_t at = 0; at < k; at += chunk) f(at, std::min(chunk, k - at));
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
  // stalls the link: each hand-off between the ranks waits out a sleep. So the wait polls without
  // sleeping while the bytes are moving (for kSpin after it starts and after each poll that
  // completed a request) and a thread of this process is blocked on a Handle (its core is idle:
  // polling takes nothing from compute), unless this node's ranks outnumber its cores. Otherwise,
  // after the first 100 polls, it sleeps between polls, so a waiting rank leaves its core to
  // compute, and a peer still computing or far behind costs no core.
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
  // A reduce-scatter's chunk: small enough that summing a chunk overlaps the ones still arriving,
  // large enough that its requests cost little next to its bytes.
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
  static constexpr std::chrono::microseconds kSpin{200};
  bool may_spin_ = false;  // this node's ranks do not outnumber its cores (set once, in adopt)
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
