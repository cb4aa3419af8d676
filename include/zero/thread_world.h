// The "threads" backend: N ranks as threads of one process, for fast tests and for trying
// ZeRO on one machine without MPI. Collectives rendezvous through shared memory with the same
// summation order as every other backend, so results match MPI bit for bit. Every rank is on
// one node unless the world is given ranks per node; split() makes a sub-world (aborted with the world it was split from). A rank's
// rendezvous waits for its own communicator's timeout (set_timeout may change it).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "zero/communicator.h"

namespace zero {

class Ledger;

class ThreadWorld {
 public:
  // `ranks_per_node` arranges the ranks as nodes of that many consecutive ranks (the last may
  // hold fewer), as if they ran on several machines: the communicators' topology (local_rank,
  // node, ...) and their traffic's across-node bytes follow it. 0: every rank on one node.
  explicit ThreadWorld(int size, CommOptions options = {}, int ranks_per_node = 0);
  ~ThreadWorld();
  ThreadWorld(const ThreadWorld&) = delete;
  ThreadWorld& operator=(const ThreadWorld&) = delete;

  int size() const;

  // The communicator of one rank; its scratch is accounted in `ledger` if given.
  std::unique_ptr<Communicator> communicator(int rank, Ledger* ledger = nullptr);

  // Fails every collective now waiting or issued later with CommError(reason).
  void abort(const std::string& reason);

  // Runs fn(rank) on `size` threads. If one rank throws, the others' collectives fail instead
  // of waiting forever; after all threads end, the first rank's error is rethrown.
  void run(const std::function<void(int rank)>& fn);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace zero
