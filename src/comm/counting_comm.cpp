// The "counting" transport: the planner's dry run. It is rank 0 of a world it does not run: every
// collective is counted as issued (traffic and calls, as any backend counts them) and completes at
// once without moving anything; all_gather_bytes hands back this rank's record in every slot, so
// start-up agreement checks pass. Segment limits and scratch_bytes() are those of the backend it
// stands for, so the engine reserves the same scratch as it would there (engine/collectives.cpp).
#include "comm/backends.h"
#include "common/error.h"

namespace zero {
namespace {

class CountingTransport final : public Transport {
 public:
  // `topology`: rank 0's in the world it stands for.
  CountingTransport(int size, bool like_mpi, const NodeTopology& topology) : Transport(0, size), like_mpi_(like_mpi) {
    set_topology(topology);
  }
  std::string backend() const override { return like_mpi_ ? "counting (as mpi)" : "counting"; }

  bool executes() const override { return false; }
  // Never called: nothing executes.
  void reduce_scatter(const void*, void*, std::size_t, Dtype) override {}
  void all_gather(const void*, void*, std::size_t) override {}
  void broadcast(void*, std::size_t, int) override {}
  void barrier() override {}
  // The group of `members` (rank 0 of this world is its first: the groups the engine makes of
  // consecutive ranks and of replicas both start with their lowest rank), its nodes those of the
  // members here.
  std::unique_ptr<Transport> split_members(const std::vector<int>& members) override {
    ZERO_CHECK(!members.empty() && members.front() == 0, "the counting transport is rank 0: its groups start with it");
    std::vector<int> leaders;  // (members) a rank standing for each member's node: its node here
    for (int m : members) leaders.push_back(topology().node_of.at(m));
    return std::make_unique<CountingTransport>(static_cast<int>(members.size()), like_mpi_, node_topology(0, leaders));
  }
  std::size_t max_elements(std::size_t element_bytes) const override {
    return like_mpi_ ? detail::mpi_max_transport_elements(element_bytes) : Transport::max_elements(element_bytes);
  }
  std::uint64_t scratch_bytes(Collective kind, std::size_t k, std::size_t element_bytes) const override {
    return like_mpi_ ? detail::mpi_transport_scratch_bytes(kind, k, element_bytes, size()) : 0;
  }
  bool exchanges_all_reduce() const override { return like_mpi_ && detail::mpi_exchanges_all_reduce(size()); }
  bool native_reduction(Dtype dtype) const override { return like_mpi_ && detail::mpi_native_reduction(dtype); }
  void native_reduce_scatter(const void*, void*, std::size_t, Dtype) override {}
  void native_all_reduce(void*, std::size_t, Dtype) override {}
  std::uint64_t native_scratch_bytes(std::size_t k, std::size_t element_bytes) const override {
    return like_mpi_ ? detail::mpi_native_scratch_bytes(k, element_bytes) : 0;
  }

 private:
  bool like_mpi_;
};

}  // namespace

std::unique_ptr<Communicator> make_counting_communicator(int size, bool like_mpi, CommOptions options, int ranks_per_node) {
  if (size < 1) throw ConfigError(cat("[comm] a world of ", size, " ranks: it needs at least 1"));
  const NodeTopology topology = block_topology(0, size, ranks_per_node > 0 ? ranks_per_node : size);
  return std::make_unique<Communicator>(std::make_unique<CountingTransport>(size, like_mpi, topology), options);
}

}  // namespace zero
