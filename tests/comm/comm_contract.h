// The communicator contract: one suite (comm_contract_test.cpp) that every transport passes
// unchanged. Each test binary that links the suite says how its ranks run by defining
// run_on_every_rank() and instantiates the suite over its worlds:
//   thread_comm_test   self, threads of 1-4 ranks                (contract_local.cpp)
//   mpi_comm_test      this process's rank of the mpirun job     (mpi_comm_test.cpp)
//   nccl_contract_test one rank per GPU; skips without a GPU      (tests/cuda/nccl_contract.cpp)
// each in both determinism modes. A test body runs on every rank and checks what that rank
// sees, so the same body serves thread ranks and processes.
//
// Deterministic mode: every sum is the rank-order sum, bit for bit. Fast mode: the transport's
// own order, so a sum is only within the error bound of any summation order of n addends,
// (n-1) * u * sum|x_i| with u = 2^-24, taken twice over: measured on these inputs, Open MPI's
// sums (4 and 8 ranks) stay within a third of that, (n-1) * 2^-23 * sum|x_i|. Moving bytes
// (all_gather, broadcast) and the traffic counters are exact in both modes.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>
#include <string>

#include "comm/communicator.h"
#include "comm_test_util.h"
#include "memory/ledger.h"

namespace zero::testing {

struct ContractWorld {
  std::string backend;  // self, threads, mpi, nccl
  int size = 1;         // ranks (mpi, nccl: the launch's)
  Determinism determinism = Determinism::kDeterministic;
  bool scratch_predicted = true;  // false: scratch_bytes() does not cover it (nccl staging host memory)
};

// For gtest's messages and ctest's names: "threads3_fast".
inline void PrintTo(const ContractWorld& w, std::ostream* os) {
  *os << w.backend << w.size << "_" << determinism_name(w.determinism);
}

// The ranks of the mpirun job this process is part of (1 outside one), for instantiating the
// suite before MPI starts.
inline int launched_world_size() {
  int n = 1;
  launched_by_mpi(&n);
  return n;
}

inline std::string contract_world_name(const ::testing::TestParamInfo<ContractWorld>& p) {
  return p.param.backend + std::to_string(p.param.size) + "_" + determinism_name(p.param.determinism);
}

// Defined by each test binary: runs body(comm, ledger) on every rank of `world`, with
// communicators in world.determinism and a timeout of 20 s or more (a failure, not a hang). `ledger`
// is the one the communicator's scratch is accounted in (nullptr where !world.scratch_predicted).
void run_on_every_rank(const ContractWorld& world, const std::function<void(Communicator&, Ledger*)>& body);

class CommContract : public ::testing::TestWithParam<ContractWorld> {
 protected:
  void on_every_rank(const std::function<void(Communicator&, Ledger*)>& body) { run_on_every_rank(GetParam(), body); }
  bool fast() const { return GetParam().determinism == Determinism::kFast; }
};

// The sum over `world` ranks of rank_input(r, n, salt), elements [offset, offset + got.size()):
// bit for bit in deterministic mode, within any order's error bound in fast mode.
inline ::testing::AssertionResult is_rank_sum(std::span<const float> got, int world, std::size_t n, int salt,
                                              std::size_t offset, Determinism determinism) {
  const std::vector<float> exact = sum_in_rank_order(world, n, salt);
  const std::span<const float> want = std::span<const float>(exact).subspan(offset, got.size());
  if (determinism == Determinism::kDeterministic) return bits_equal(got, want);
  std::vector<double> magnitude(got.size(), 0.0);  // sum |x_i| per element
  for (int r = 0; r < world; ++r) {
    const std::vector<float> x = rank_input(r, n, salt);
    for (std::size_t i = 0; i < got.size(); ++i) magnitude[i] += std::fabs(x[offset + i]);
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = (world - 1) * std::ldexp(1.0, -23) * magnitude[i];
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= bound)) {
      return ::testing::AssertionFailure() << "element " << offset + i << ": " << got[i] << " is further than " << bound
                                           << " from the rank-order sum " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace zero::testing
