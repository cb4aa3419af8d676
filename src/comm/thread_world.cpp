#include "comm/thread_world.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "comm/reduce.h"
#include "common/error.h"

namespace zero {

namespace {

// What a rank says it is doing at a rendezvous. Ranks that meet with different signatures
// issued different collectives (or different sizes); reading each other's buffers then would
// run past their ends, so the world fails instead.
struct Signature {
  const char* op = nullptr;  // "reduce_scatter", "all_gather", "broadcast", "barrier"
  std::size_t bytes = 0;     // per rank
  int root = -1;             // broadcast only
  bool operator==(const Signature& o) const {
    return std::strcmp(op, o.op) == 0 && bytes == o.bytes && root == o.root;
  }
};

}  // namespace

// Shared state of the world. A collective is two rendezvous: after the first, every rank has
// posted its send pointer and may read the others'; after the second, nobody reads any more,
// so buffers may be reused.
struct ThreadWorld::State {
  int size;
  CommOptions options;
  std::vector<const void*> posted;  // (size) send pointer of each rank for the current collective
  std::vector<Signature> signatures;  // (size) what each rank posted, checked by the last to arrive
  std::vector<std::string> labels;    // (size) each rank's op_label, for the mismatch message

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::weak_ptr<State>> children;  // worlds split from this one: aborted with it
  std::uint64_t generation = 0;
  std::vector<bool> arrived;  // (size) who has reached the current rendezvous
  int count = 0;
  bool aborted = false;
  std::string abort_reason;

  std::vector<int> node_leader;  // (size) the lowest world rank on each rank's node (node_topology)

  State(int n, CommOptions o, std::vector<int> leaders)
      : size(n), options(o), posted(n, nullptr), signatures(n), labels(n), arrived(n, false), node_leader(std::move(leaders)) {}

  // Waits until every rank has arrived, for at most the caller's timeout. With a signature (the
  // first rendezvous of a collective), the last rank to arrive checks that all ranks issued the
  // same collective.
  void rendezvous(int rank, const std::string& what, std::chrono::milliseconds timeout, const Signature* sig = nullptr) {
    std::unique_lock lock(mu);
    if (aborted) throw CommError(abort_reason);
    const std::uint64_t gen = generation;
    arrived[rank] = true;
    if (sig) {
      signatures[rank] = *sig;
      labels[rank] = what;
    }
    if (++count == size) {
      if (sig && !signatures_agree()) {
        cv.notify_all();  // the waiters see `aborted` and throw too
        throw CommError(abort_reason);
      }
      count = 0;
      arrived.assign(size, false);
      ++generation;
      cv.notify_all();
      return;
    }
    const bool done = cv.wait_for(lock, timeout, [&] { return generation != gen || aborted; });
    if (generation != gen) return;
    if (!done) {
      std::string missing;
      for (int r = 0; r < size; ++r)
        if (!arrived[r]) missing += cat(missing.empty() ? "" : ", ", r);
      aborted = true;
      abort_reason = cat("[comm] ", what, " on rank ", rank, " timed out after ",
                         timeout.count(), " ms waiting for ranks ", missing,
                         ": they are stuck or issued a different sequence of collectives");
      cv.notify_all();
    }
    throw CommError(abort_reason);
  }

  // Under mu, with every rank's signature posted. On a mismatch, fails the world.
  bool signatures_agree() {
    int odd = -1;
    for (int r = 1; r < size && odd < 0; ++r)
      if (!(signatures[r] == signatures[0])) odd = r;
    if (odd < 0) return true;
    aborted = true;
    abort_reason = cat("[comm] ranks issued different collectives: rank 0 ", labels[0], ", rank ", odd, " ",
                       labels[odd], ": every rank must issue the same collectives, with the same sizes, in the same order");
    return false;
  }

  void abort(const std::string& reason) {
    std::vector<std::weak_ptr<State>> split_from_here;
    {
      std::lock_guard lock(mu);
      if (!aborted) {
        aborted = true;
        abort_reason = reason;
      }
      cv.notify_all();
      split_from_here = children;
    }
    for (auto& w : split_from_here)  // outside mu: a child never locks its parent
      if (auto child = w.lock()) child->abort(reason);
  }
};

namespace {

class ThreadTransport final : public Transport {
 public:
  ThreadTransport(std::shared_ptr<ThreadWorld::State> world, int rank) : Transport(rank, world->size), world_(std::move(world)) {
    set_topology(node_topology(rank, world_->node_leader));
  }
  std::string backend() const override { return "threads"; }

  [[noreturn]] void abort(int code) override {
    world_->abort(cat("[comm] rank ", rank(), " aborted the job (code ", code, ")"));
    throw CommError(cat("[comm] rank ", rank(), " aborted the job (code ", code, ")"));
  }

  void reduce_scatter(const void* send, void* recv, std::size_t k, Dtype dtype) override {
    const std::size_t bytes = k * dtype_bytes(dtype);
    const std::string what = op_label("reduce_scatter", bytes * size());
    post_and_meet(send, what, {"reduce_scatter", bytes, -1});
    std::vector<const void*> in(size());
    for (int j = 0; j < size(); ++j)
      in[j] = static_cast<const char*>(world_->posted[j]) + static_cast<std::size_t>(rank()) * bytes;
    detail::sum_in_rank_order(in.data(), size(), recv, k, dtype);
    world_->rendezvous(rank(), what, timeout());
  }

  void all_gather(const void* send, void* recv, std::size_t bytes) override {
    const std::string what = op_label("all_gather", bytes * size());
    post_and_meet(send, what, {"all_gather", bytes, -1});
    auto* out = static_cast<char*>(recv);
    for (int j = 0; j < size(); ++j) {
      const void* src = world_->posted[j];
      char* dst = out + static_cast<std::size_t>(j) * bytes;
      if (bytes != 0 && src != dst) std::memcpy(dst, src, bytes);  // an empty gather's buffers may be null
    }
    world_->rendezvous(rank(), what, timeout());
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    const std::string what = op_label("broadcast", bytes);
    post_and_meet(data, what, {"broadcast", bytes, root});
    if (bytes != 0 && rank() != root) std::memcpy(data, world_->posted[root], bytes);
    world_->rendezvous(rank(), what, timeout());
  }

  void barrier() override {
    post_and_meet(nullptr, op_label("barrier", 0), {"barrier", 0, -1});
  }

  // A sub-world of the ranks with this color, in three rendezvous: every rank posts its request
  // (color, key); the lowest rank of each color makes the sub-world's state and stores it in its
  // own request; the others of its color copy it; the last rendezvous keeps the leader's request
  // alive until all have copied it.
  std::unique_ptr<Transport> split(int color, int key) override {
    struct Request {
      int color, key;
      std::shared_ptr<ThreadWorld::State> child;
    };
    const std::string what = op_label("split", 0);
    Request mine{color, key, nullptr};
    post_and_meet(&mine, what, {"split", 0, -1});
    const auto request = [&](int r) { return static_cast<const Request*>(world_->posted[r]); };
    std::vector<int> members;  // world ranks of this color, in (key, rank) order
    for (int r = 0; r < size(); ++r)
      if (request(r)->color == color) members.push_back(r);
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return request(a)->key < request(b)->key; });
    const int leader = *std::min_element(members.begin(), members.end());
    if (rank() == leader) {
      std::vector<int> leaders;  // the members' nodes, as the world has them
      for (int m : members) leaders.push_back(world_->node_leader[m]);
      mine.child = std::make_shared<ThreadWorld::State>(static_cast<int>(members.size()), world_->options, std::move(leaders));
      std::lock_guard lock(world_->mu);
      world_->children.push_back(mine.child);
    }
    world_->rendezvous(rank(), what, timeout());
    std::shared_ptr<ThreadWorld::State> child = request(leader)->child;
    world_->rendezvous(rank(), what, timeout());
    const int new_rank = static_cast<int>(std::find(members.begin(), members.end(), rank()) - members.begin());
    return std::make_unique<ThreadTransport>(std::move(child), new_rank);
  }

 private:
  void post_and_meet(const void* send, const std::string& what, const Signature& sig) {
    world_->posted[rank()] = send;  // safe: every rank finished reading the previous collective
    world_->rendezvous(rank(), what, timeout(), &sig);
  }

  std::shared_ptr<ThreadWorld::State> world_;
};

}  // namespace

ThreadWorld::ThreadWorld(int size, CommOptions options, int ranks_per_node) {
  if (size < 1) throw ConfigError(cat("[comm] a world needs at least one rank, not ", size));
  if (ranks_per_node < 0) throw ConfigError(cat("[comm] ranks per node must be at least 1 (or 0: all on one node), not ", ranks_per_node));
  const int per_node = ranks_per_node == 0 ? size : ranks_per_node;
  std::vector<int> leaders(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) leaders[r] = r / per_node * per_node;
  state_ = std::make_shared<State>(size, options, std::move(leaders));
}

ThreadWorld::~ThreadWorld() = default;

int ThreadWorld::size() const { return state_->size; }

std::unique_ptr<Communicator> ThreadWorld::communicator(int rank, Ledger* ledger) {
  ZERO_CHECK(rank >= 0 && rank < state_->size, "rank ", rank, " outside world of ", state_->size);
  CommOptions o = state_->options;
  o.ledger = ledger;
  return std::make_unique<Communicator>(std::make_unique<ThreadTransport>(state_, rank), o);
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
