#include "comm/thread_world.h"

#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "comm/reduce.h"
#include "common/error.h"

namespace zero {

// Shared state of the world. A collective is two rendezvous: after the first, every rank has
// posted its send pointer and may read the others'; after the second, nobody reads any more,
// so buffers may be reused.
struct ThreadWorld::State {
  int size;
  CommOptions options;
  std::vector<const void*> posted;  // (size) send pointer of each rank for the current collective

  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t generation = 0;
  std::vector<bool> arrived;  // (size) who has reached the current rendezvous
  int count = 0;
  bool aborted = false;
  std::string abort_reason;

  State(int n, CommOptions o) : size(n), options(o), posted(n, nullptr), arrived(n, false) {}

  void rendezvous(int rank, const std::string& what) {
    std::unique_lock lock(mu);
    if (aborted) throw CommError(abort_reason);
    const std::uint64_t gen = generation;
    arrived[rank] = true;
    if (++count == size) {
      count = 0;
      arrived.assign(size, false);
      ++generation;
      cv.notify_all();
      return;
    }
    const bool done = cv.wait_for(lock, options.timeout, [&] { return generation != gen || aborted; });
    if (generation != gen) return;
    if (!done) {
      std::string missing;
      for (int r = 0; r < size; ++r)
        if (!arrived[r]) missing += cat(missing.empty() ? "" : ", ", r);
      aborted = true;
      abort_reason = cat("[comm] ", what, " on rank ", rank, " timed out after ",
                         options.timeout.count(), " ms waiting for ranks ", missing,
                         ": they are stuck or issued a different sequence of collectives");
      cv.notify_all();
    }
    throw CommError(abort_reason);
  }

  void abort(const std::string& reason) {
    std::lock_guard lock(mu);
    if (!aborted) {
      aborted = true;
      abort_reason = reason;
    }
    cv.notify_all();
  }
};

namespace {

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadWorld::State> world, int rank, CommOptions options)
      : Communicator(rank, world->size, options), world_(std::move(world)) {}
  ~ThreadCommunicator() override { stop_comm_thread(); }
  std::string backend() const override { return "threads"; }

  [[noreturn]] void abort(int code) override {
    world_->abort(cat("[comm] rank ", rank(), " aborted the job (code ", code, ")"));
    throw CommError(cat("[comm] rank ", rank(), " aborted the job (code ", code, ")"));
  }

 protected:
  void do_reduce_scatter(const float* send, float* recv, std::size_t k) override {
    const std::string what = op_label("reduce_scatter", k * sizeof(float) * size());
    post_and_meet(send, what);
    std::vector<const float*> in(size());
    for (int j = 0; j < size(); ++j)
      in[j] = static_cast<const float*>(world_->posted[j]) + static_cast<std::size_t>(rank()) * k;
    detail::sum_in_rank_order(in.data(), size(), recv, k);
    world_->rendezvous(rank(), what);
  }

  void do_all_gather(const void* send, void* recv, std::size_t bytes) override {
    const std::string what = op_label("all_gather", bytes * size());
    post_and_meet(send, what);
    auto* out = static_cast<char*>(recv);
    for (int j = 0; j < size(); ++j) {
      const void* src = world_->posted[j];
      char* dst = out + static_cast<std::size_t>(j) * bytes;
      if (src != dst) std::memcpy(dst, src, bytes);
    }
    world_->rendezvous(rank(), what);
  }

  void do_broadcast(void* data, std::size_t bytes, int root) override {
    const std::string what = op_label("broadcast", bytes);
    post_and_meet(data, what);
    if (rank() != root) std::memcpy(data, world_->posted[root], bytes);
    world_->rendezvous(rank(), what);
  }

  void do_barrier() override {
    post_and_meet(nullptr, op_label("barrier", 0));
  }

 private:
  void post_and_meet(const void* send, const std::string& what) {
    world_->posted[rank()] = send;  // safe: every rank finished reading the previous collective
    world_->rendezvous(rank(), what);
  }

  std::shared_ptr<ThreadWorld::State> world_;
};

}  // namespace

ThreadWorld::ThreadWorld(int size, CommOptions options) {
  if (size < 1) throw ConfigError(cat("[comm] a world needs at least one rank, not ", size));
  state_ = std::make_shared<State>(size, options);
}

ThreadWorld::~ThreadWorld() = default;

int ThreadWorld::size() const { return state_->size; }

std::unique_ptr<Communicator> ThreadWorld::communicator(int rank, Ledger* ledger) {
  ZERO_CHECK(rank >= 0 && rank < state_->size, "rank ", rank, " outside world of ", state_->size);
  CommOptions o = state_->options;
  o.ledger = ledger;
  return std::make_unique<ThreadCommunicator>(state_, rank, o);
}

void ThreadWorld::abort(const std::string& reason) { state_->abort(reason); }

void ThreadWorld::run(const std::function<void(int rank)>& fn) {
  std::vector<std::exception_ptr> errors(state_->size);
  std::vector<std::thread> threads;
  for (int r = 0; r < state_->size; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (const std::exception& e) {
        errors[r] = std::current_exception();
        abort(cat("[comm] rank ", r, " failed: ", e.what()));
      } catch (...) {
        errors[r] = std::current_exception();
        abort(cat("[comm] rank ", r, " failed"));
      }
    });
  }
  for (auto& t : threads) t.join();
  // The root cause is the first error that is not a consequence of another rank's failure.
  for (auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const CommError&) {
      continue;
    } catch (...) {
      throw;
    }
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace zero
