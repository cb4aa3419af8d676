// The "mpi" backend: one rank per process, over Open MPI (so across machines too).
//
// Only the comm thread calls MPI after initialisation, so MPI_THREAD_SERIALIZED suffices.
// Collectives use the non-blocking MPI calls, polled until a deadline, so a dead or stuck peer
// becomes a CommError naming the operation instead of a hang.
// reduce_scatter is an all-to-all of the pieces followed by the rank-order sum that every
// backend shares (MPI's own reductions may add in any order, which would break bit-identity).
//
// A failed collective (timeout or MPI error) leaves its request live: MPI cannot cancel a
// collective, and a late peer can still complete it, writing into its buffers during any later
// MPI call. So after a failure the communicator is *broken*: it keeps the failed collective's
// scratch alive, refuses every later collective without calling MPI, and skips MPI_Finalize
// (which would progress the orphan, or wait for peers that are gone). The process should end
// the job with abort(), as the CLI does.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>
#include <vector>

#include "comm/backends.h"
#include "comm/reduce.h"
#include "common/error.h"
#include "memory/ledger.h"

namespace zero::detail {
namespace {

std::string mpi_error_string(int code) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, msg, &len);
  return std::string(msg, len);
}

int checked_count(std::size_t n, const std::string& what) {
  if (n > static_cast<std::size_t>(INT_MAX)) {
    throw CommError(cat("[comm] ", what, ": ", n, " elements per rank exceed MPI's int count; use smaller units or buckets"));
  }
  return static_cast<int>(n);
}

class MpiCommunicator final : public Communicator {
 public:
  static std::unique_ptr<Communicator> create(CommOptions options) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    bool owns_init = false;
    if (!initialized) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      owns_init = true;
      if (provided < MPI_THREAD_SERIALIZED) {
        throw CommError("[comm] this MPI library does not support MPI_THREAD_SERIALIZED, which zero's comm thread needs");
      }
    }
    MPI_Comm comm, roll_call;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &roll_call);  // only for naming missing ranks after a timeout
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(roll_call, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    return std::unique_ptr<Communicator>(new MpiCommunicator(comm, roll_call, rank, size, owns_init, options));
  }

  ~MpiCommunicator() override {
    stop_comm_thread();
    if (!failure_.empty()) return;  // broken: see the top of this file
    MPI_Comm_free(&comm_);
    MPI_Comm_free(&roll_call_);
    if (owns_init_) MPI_Finalize();
  }

  std::string backend() const override { return "mpi"; }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 protected:
  void do_reduce_scatter(const float* send, float* recv, std::size_t k) override {
    const std::string what = op_label("reduce_scatter", k * sizeof(float) * size());
    refuse_if_broken(what);
    const std::size_t n = static_cast<std::size_t>(size());
    // pieces[j] = rank j's piece for this rank: (size, k) f32, comm scratch
    Scratch scratch;
    float* pieces = nullptr;
    if (options().ledger) {
      scratch.owned = Buffer(*options().ledger, Tier::kDevice, Category::kCommBuffers, n * k, "reduce_scatter scratch", false);  // all of it is received before it is read
      pieces = scratch.owned.data();
    } else {
      scratch.unaccounted.resize(n * k);
      pieces = scratch.unaccounted.data();
    }
    MPI_Request req;
    const int count = checked_count(k, what);
    try {
      check(MPI_Ialltoall(send, count, MPI_FLOAT, pieces, count, MPI_FLOAT, comm_, &req), what);
      wait(req, what);
    } catch (const CommError&) {
      orphans_.push_back(std::move(scratch));  // MPI may still write into it
      throw;
    }
    std::vector<const float*> in(n);
    for (std::size_t j = 0; j < n; ++j) in[j] = pieces + j * k;
    sum_in_rank_order(in.data(), size(), recv, k);
  }

  void do_all_gather(const void* send, void* recv, std::size_t bytes) override {
    const std::string what = op_label("all_gather", bytes * size());
    refuse_if_broken(what);
    const void* src = send;
    if (send == static_cast<const char*>(recv) + static_cast<std::size_t>(rank()) * bytes) src = MPI_IN_PLACE;
    MPI_Request req;
    const int count = checked_count(bytes, what);
    check(MPI_Iallgather(src, count, MPI_BYTE, recv, count, MPI_BYTE, comm_, &req), what);
    wait(req, what);
  }

  void do_broadcast(void* data, std::size_t bytes, int root) override {
    const std::string what = op_label("broadcast", bytes);
    refuse_if_broken(what);
    MPI_Request req;
    check(MPI_Ibcast(data, checked_count(bytes, what), MPI_BYTE, root, comm_, &req), what);
    wait(req, what);
  }

  void do_barrier() override {
    const std::string what = op_label("barrier", 0);
    refuse_if_broken(what);
    MPI_Request req;
    check(MPI_Ibarrier(comm_, &req), what);
    wait(req, what);
  }

 private:
  MpiCommunicator(MPI_Comm comm, MPI_Comm roll_call, int rank, int size, bool owns_init, CommOptions options)
      : Communicator(rank, size, options), comm_(comm), roll_call_(roll_call), owns_init_(owns_init) {}

  // Scratch of one collective; moved to orphans_ if the collective fails.
  struct Scratch {
    Buffer owned;                    // with a ledger: accounted as comm_buffers
    std::vector<float> unaccounted;  // without one
  };

  void check(int rc, const std::string& what) {
    if (rc != MPI_SUCCESS) fail(cat("[comm] ", what, " failed on rank ", rank(), ": ", mpi_error_string(rc)));
  }

  [[noreturn]] void fail(std::string message) {
    failure_ = message;
    throw CommError(std::move(message));
  }

  void refuse_if_broken(const std::string& what) const {
    if (!failure_.empty()) {
      throw CommError(cat("[comm] ", what, " on rank ", rank(), " refused: an earlier collective failed (", failure_,
                          "), so MPI is in an unknown state; end the job"));
    }
  }

  // Polls until done or the deadline. Sleeps between polls once the wait is long, so a waiting
  // rank does not take a core from compute (ranks may outnumber cores).
  void wait(MPI_Request& req, const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    for (int polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      if (std::chrono::steady_clock::now() - start > options().timeout) {
        fail(cat("[comm] ", what, " on rank ", rank(), " did not complete within ", options().timeout.count(), " ms; ",
                 missing_ranks(), ": they died, are stuck, or issued a different sequence of collectives"));
      }
      if (polls > 100) std::this_thread::sleep_for(std::chrono::microseconds(polls > 10000 ? 500 : 20));
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
      if (MPI_Isend(&roll_call_token_, 1, MPI_INT, r, kRollCallTag, roll_call_, &req) == MPI_SUCCESS) MPI_Request_free(&req);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::min<std::chrono::milliseconds>(options().timeout, std::chrono::seconds(10));
    int answered = 1;
    while (answered < n && std::chrono::steady_clock::now() < deadline) {
      int flag = 0;
      MPI_Status status;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kRollCallTag, roll_call_, &flag, &status) != MPI_SUCCESS) break;
      if (!flag) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      int token = 0;
      MPI_Recv(&token, 1, MPI_INT, status.MPI_SOURCE, kRollCallTag, roll_call_, MPI_STATUS_IGNORE);
      if (!heard[status.MPI_SOURCE]) heard[status.MPI_SOURCE] = true, ++answered;
    }
    std::string missing;
    for (int r = 0; r < n; ++r)
      if (!heard[r]) missing += cat(missing.empty() ? "" : ", ", r);
    if (missing.empty()) return "every rank is waiting in a collective";
    return cat("missing ranks: ", missing, " (not in a collective within the timeout)");
  }

  static constexpr int kRollCallTag = 7001;
  MPI_Comm comm_;
  MPI_Comm roll_call_;
  int roll_call_token_ = 1;  // the payload of a roll-call message (stays valid until MPI sends it)
  bool owns_init_;
  std::string failure_;          // why the communicator broke; empty while healthy (comm thread)
  std::vector<Scratch> orphans_;  // scratch of failed collectives, which MPI may still write
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(CommOptions options) { return MpiCommunicator::create(options); }
bool built_with_mpi() { return true; }

}  // namespace zero::detail
