// The communicator contract suite (tests/comm/comm_contract_test.cpp) over the nccl backend, one
// rank per GPU under mpirun, in both determinism modes (fast: ncclReduceScatter/ncclAllReduce).
// The suite's buffers are host memory, which the backend stages through the GPU; that staging is
// not in scratch_bytes(), so the scratch test is skipped here. Without a GPU, gpu_main.cpp skips
// the whole binary (exit 77).
#include <memory>

#include "backends/registry.h"
#include "comm/comm_contract.h"

namespace zero::testing {

void run_on_every_rank(const ContractWorld& world, const std::function<void(Communicator&, Ledger*)>& body) {
  // One communicator for the whole run: MPI, which bootstraps it, starts once per process.
  static std::unique_ptr<Communicator> comm = [] {
    CommOptions options;
    options.timeout = std::chrono::seconds(60);
    return make_named_communicator("nccl", options);
  }();
  comm->set_determinism(world.determinism);
  body(*comm, nullptr);
  comm->set_determinism(Determinism::kDeterministic);
}

INSTANTIATE_TEST_SUITE_P(Nccl, CommContract,
                         ::testing::Values(ContractWorld{"nccl", launched_world_size(), Determinism::kDeterministic, false},
                                           ContractWorld{"nccl", launched_world_size(), Determinism::kFast, false}),
                         contract_world_name);

}  // namespace zero::testing
