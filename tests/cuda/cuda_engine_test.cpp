// The engine on the cuda device: stages 0-3, with and without offload, with gradient clipping
// (sum_squares) and mixed precision, give the cpu device's weights bit for bit (the toy module
// computes the same arithmetic on both), so also each other's. One rank (self), or under mpirun
// several processes sharing the GPU (the mpi backend staging through host memory) or one rank
// per GPU with nccl: the test takes the backend from ZERO_TEST_COMM (default self).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/registry.h"
#include "comm/communicator.h"
#include "cuda/toy_module.h"
#include "engine/engine.h"
#include "memory/ledger.h"

namespace zero {
namespace {

struct ToyRun {
  int stage = 0;
  bool offload = false, offload_params = false;
  float clipping = 0.0f;
  Dtype dtype = Dtype::kF32;
};

std::vector<float> train(const std::string& device, const ToyRun& r, Communicator& comm) {
  testing::ToyModule module(device == "cuda", comm.rank(), {1000, 333, 4097, 1});
  EngineConfig c;
  c.stage = r.stage;
  c.device = device;
  c.gradient_clipping = r.clipping;
  c.offload.optimizer = r.offload;
  c.offload.params = r.offload_params;
  c.offload.pin_memory = true;
  c.precision.compute = r.dtype;
  c.adam.lr = 1e-2f;
  c.adam.weight_decay = 0.1f;
  c.reduce_bucket_elements = 1000;  // several pieces per unit: the segmented paths
  Ledger ledger;
  Engine engine(c, module, comm, ledger);
  for (int s = 0; s < 4; ++s) engine.train_step();
  engine.synchronize();
  return engine.full_parameters();
}

std::unique_ptr<Communicator> world() {
  const char* name = std::getenv("ZERO_TEST_COMM");
  return make_named_communicator(name ? name : "self");
}

TEST(CudaEngine, EveryStageAndOffloadGivesTheCpuDevicesWeights) {
  auto comm = world();
  for (Dtype dtype : {Dtype::kF32, Dtype::kBf16}) {
    for (float clipping : {0.0f, 0.5f}) {
      ToyRun base;
      base.dtype = dtype;
      base.clipping = clipping;
      const std::vector<float> want = train("cpu", base, *comm);
      for (int stage = 0; stage <= 3; ++stage) {
        for (int offload = 0; offload <= (stage == 0 ? 0 : (stage == 3 ? 2 : 1)); ++offload) {
          ToyRun r = base;
          r.stage = stage;
          r.offload = offload >= 1;
          r.offload_params = offload == 2;
          const std::vector<float> got = train("cuda", r, *comm);
          ASSERT_EQ(got.size(), want.size());
          EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
              << "stage " << stage << " offload " << offload << " " << dtype_label(dtype) << " clipping " << clipping << " ("
              << comm->backend() << ", " << comm->size() << " ranks)";
        }
      }
    }
  }
}

}  // namespace
}  // namespace zero
