// The "counting" backend: the planner's dry run. It is rank 0 of a world it does not run: every
// collective is counted as issued (traffic and calls, as any backend counts them) and completes at
// once without moving anything; all_gather_bytes hands back this rank's record in every slot, so
// start-up agreement checks pass. Segment limits and scratch_bytes() are those of the backend it
// stands for, so the engine reserves the same scratch as it would there (engine/collectives.cpp).
#include "comm/backends.h"
#include "common/error.h"

namespace zero {
namespace {

class CountingCommunicator final : public Communicator {
 public:
  CountingCommunicator(int size, bool like_mpi, CommOptions options)
      : Communicator(0, size, options), like_mpi_(like_mpi) {}
  ~CountingCommunicator() override { stop_comm_thread(); }
  std::string backend() const override { return like_mpi_ ? "counting (as mpi)" : "counting"; }

 protected:
  bool executes() const override { return false; }
  // Never called: nothing executes.
  void do_reduce_scatter(const void*, void*, std::size_t, Dtype) override {}
  void do_all_gather(const void*, void*, std::size_t) override {}
  void do_broadcast(void*, std::size_t, int) override {}
  void do_barrier() override {}
  std::size_t max_transport_elements(std::size_t element_bytes) const override {
    return like_mpi_ ? detail::mpi_max_transport_elements(element_bytes) : Communicator::max_transport_elements(element_bytes);
  }
  std::uint64_t transport_scratch_bytes(Collective kind, std::size_t k, std::size_t element_bytes) const override {
    return like_mpi_ ? detail::mpi_transport_scratch_bytes(kind, k, element_bytes, size()) : 0;
  }
  bool native_reduction(Dtype dtype) const override { return like_mpi_ && detail::mpi_native_reduction(dtype); }
  void do_native_reduce_scatter(const void*, void*, std::size_t, Dtype) override {}
  void do_native_all_reduce(void*, std::size_t, Dtype) override {}
  std::uint64_t native_scratch_bytes(std::size_t k, std::size_t element_bytes) const override {
    return like_mpi_ ? detail::mpi_native_scratch_bytes(k, element_bytes) : 0;
  }

 private:
  bool like_mpi_;
};

}  // namespace

std::unique_ptr<Communicator> make_counting_communicator(int size, bool like_mpi, CommOptions options) {
  if (size < 1) throw ConfigError(cat("[comm] a world of ", size, " ranks: it needs at least 1"));
  return std::make_unique<CountingCommunicator>(size, like_mpi, options);
}

}  // namespace zero
