// The engine over real MPI processes (run under mpirun with 2 and 4 ranks): stages 0-3 agree
// bit for bit, and agree bit for bit with the threads backend of the same world size.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "comm/thread_world.h"
#include "common/error.h"
#include "engine/gpt_run.h"
#include "engine/mlp_run.h"

namespace zero {
namespace {

using testing::MlpRun;
using testing::RankResult;
using testing::same_bits;

Communicator& world() {
  static std::unique_ptr<Communicator> comm = make_communicator("mpi", {std::chrono::seconds(60), nullptr});
  return *comm;
}

// The same run on N in-process thread ranks, for the cross-backend comparison.
std::vector<float> threads_result(const MlpRun& run, int n) {
  ThreadWorld threads(n);
  std::vector<float> params;
  threads.run([&](int r) {
    Ledger ledger;
    auto comm = threads.communicator(r, &ledger);
    auto result = testing::train_mlp(run, *comm, ledger);
    if (r == 0) params = result.params;
  });
  return params;
}

// Parameterised over the model (plain or tied) and the precision (f32, or mixed with bf16 or
// f16: 16-bit collectives over MPI, summed in f32 in rank order like the threads backend).
class MpiStages : public ::testing::TestWithParam<std::tuple<bool, Dtype>> {};

TEST_P(MpiStages, BitIdenticalAcrossStagesRanksAndBackends) {
  Communicator& comm = world();
  MlpRun run;
  const auto [tied, dtype] = GetParam();
  run.dtype = dtype;
  if (tied) run.shape = {{9, 21, 17, 21, 9}, true};
  std::vector<float> stage0;
  for (int stage = 0; stage <= 3; ++stage) {
    run.stage = stage;
    Ledger ledger;
    RankResult result = testing::train_mlp(run, comm, ledger);
    // Every rank holds the same weights: compare with rank 0's, broadcast.
    std::vector<float> root = result.params;
    comm.broadcast(root, 0);
    EXPECT_TRUE(same_bits(result.params, root)) << "rank " << comm.rank() << " stage " << stage;
    if (stage == 0) {
      stage0 = result.params;
      EXPECT_TRUE(same_bits(stage0, threads_result(run, comm.size())))
          << "mpi and threads backends differ at N=" << comm.size();
    } else {
      EXPECT_TRUE(same_bits(result.params, stage0)) << "stage " << stage << " differs from stage 0 under MPI";
    }
    // Traffic under MPI is what the formula says, as on threads. (With a tied weight, stage 3
    // gathers the owning unit once more in forward and in backward, for the borrower.)
    if (tied) continue;
    const double passes = stage == 3 ? 3.0 : 2.0;
    const double vote = dtype == Dtype::kF16 ? comm.size() - 1 : 0;  // fp16's overflow flags
    EXPECT_EQ(static_cast<double>(result.step_traffic.total_sent()),
              passes * static_cast<double>(result.padded) * (comm.size() - 1) / comm.size() * dtype_bytes(dtype) + vote);
  }
}

// Hybrid sharding under mpirun (shard groups of N/2 ranks, split from the MPI communicator):
// the thread ranks' bits, every rank the same, and on one machine no byte across nodes.
TEST(MpiHybrid, SameBitsAsThreadRanks) {
  Communicator& comm = world();
  MlpRun run;
  run.steps = 3;
  run.mics_shard_size = std::max(1, comm.size() / 2);
  for (int stage = 1; stage <= 3; ++stage) {
    run.stage = stage;
    Ledger ledger;
    const RankResult result = testing::train_mlp(run, comm, ledger);
    EXPECT_TRUE(same_bits(result.params, threads_result(run, comm.size()))) << "stage " << stage << " rank " << comm.rank();
    EXPECT_GT(result.step_traffic.total_sent(), 0u);
    EXPECT_EQ(result.step_traffic.total_sent_across(), 0u) << "one machine, one node";
  }
}

// ZeRO++ under mpirun (hpZ groups of 2 inside the machine, split from the MPI communicator; qwZ's
// int8 packets as MPI bytes): the thread ranks' bits, and hpZ alone stage 3's.
TEST(MpiZeropp, SameBitsAsThreadRanks) {
  Communicator& comm = world();
  if (comm.size() % 2 != 0) GTEST_SKIP() << "hpZ groups of 2 need an even number of ranks";
  MlpRun run;
  run.stage = 3;
  run.steps = 3;
  Ledger stage3_ledger;
  const std::vector<float> stage3 = testing::train_mlp(run, comm, stage3_ledger).params;
  for (const auto& [qwz, hpz] : {std::pair<bool, int>{true, 1}, {false, 2}, {true, 2}}) {
    run.quantized_weights = qwz;
    run.hpz_partition_size = hpz;
    Ledger ledger;
    const RankResult result = testing::train_mlp(run, comm, ledger);
    EXPECT_TRUE(same_bits(result.params, threads_result(run, comm.size()))) << "qwZ " << qwz << " H=" << hpz << " rank " << comm.rank();
    if (!qwz) {
      EXPECT_TRUE(same_bits(result.params, stage3)) << "hpZ alone, rank " << comm.rank();
    }
  }
}

// Under mpirun, buckets of a few elements split every unit's reduction and gather into many MPI
// messages (the stand-in for a slice over INT_MAX bytes, which would need a 2 GiB tensor): every
// stage, with and without offload, gives the unbucketed bits.
TEST(MpiBuckets, PiecesChangeNoBits) {
  Communicator& comm = world();
  MlpRun run;
  run.steps = 3;
  run.shape = {{9, 21, 17, 21, 9}, true};
  for (Dtype dtype : {Dtype::kF32, Dtype::kBf16})
  for (int stage = 0; stage <= 3; ++stage)
    for (bool offload : {false, true}) {
      if (offload && stage == 0) continue;
      run.dtype = dtype;
      run.stage = stage;
      run.offload.optimizer = offload;
      run.reduce_bucket = run.gather_bucket = 0;
      Ledger whole_ledger;
      const RankResult whole = testing::train_mlp(run, comm, whole_ledger);
      run.reduce_bucket = 5;
      run.gather_bucket = 3;
      Ledger ledger;
      const RankResult pieces = testing::train_mlp(run, comm, ledger);
      EXPECT_TRUE(same_bits(pieces.params, whole.params)) << "stage " << stage << " offload " << offload;
      std::uint64_t p = 0, w = 0;
      for (int c = 0; c < kNumCollectives; ++c) {
        p += pieces.step_traffic.pieces[c];
        w += whole.step_traffic.pieces[c];
      }
      EXPECT_GT(p, 4 * w) << "stage " << stage;
    }
}

// The NVMe tier under mpirun: every rank names the same nvme_path and swaps in a folder of its
// own there; stages 1-3 in f32 and bf16 (and 3 with the parameter slices on disk too, the
// optimizer on NVMe or on the host) give no offload's bits, and ZenFlow on NVMe host ZenFlow's;
// nothing is left in the folder.
TEST(MpiNvme, BitIdenticalToNoOffload) {
  Communicator& comm = world();
  const std::filesystem::path folder = std::filesystem::absolute("nvme-mpi-test");
  std::filesystem::create_directories(folder);
  MlpRun run;
  run.steps = 3;
  for (Dtype dtype : {Dtype::kF32, Dtype::kBf16})
    for (int stage = 1; stage <= 3; ++stage) {
      run.dtype = dtype;
      run.stage = stage;
      run.offload = {};
      Ledger plain_ledger;
      const RankResult plain = testing::train_mlp(run, comm, plain_ledger);
      run.offload.optimizer = run.offload.optimizer_nvme = true;
      run.offload.nvme.path = folder.string();
      run.offload.nvme.sub_group_size = 30;
      run.offload.nvme.buffer_count = 3;
      Ledger ledger;
      const RankResult nvme = testing::train_mlp(run, comm, ledger);
      EXPECT_TRUE(same_bits(nvme.params, plain.params)) << "stage " << stage << " " << dtype_label(dtype) << " rank " << comm.rank();
      if (stage != 3) continue;
      run.offload.params = run.offload.params_nvme = true;  // the parameter slices on disk too
      run.offload.param_nvme.path = folder.string();
      run.offload.param_nvme.buffer_count = 3;
      Ledger param_ledger;
      const RankResult params = testing::train_mlp(run, comm, param_ledger);
      EXPECT_TRUE(same_bits(params.params, plain.params)) << "offload_param nvme, " << dtype_label(dtype) << " rank " << comm.rank();
      run.offload.optimizer_nvme = false;  // the optimizer on the host
      Ledger cpu_ledger;
      const RankResult cpu = testing::train_mlp(run, comm, cpu_ledger);
      EXPECT_TRUE(same_bits(cpu.params, plain.params)) << "offload_param nvme, optimizer cpu, " << dtype_label(dtype) << " rank " << comm.rank();
    }
  // ZenFlow (f32, stages 1-3; the CPU every 2 steps, overlapped): on the NVMe tier, host ZenFlow's bits.
  for (int stage = 1; stage <= 3; ++stage) {
    run.dtype = Dtype::kF32;
    run.stage = stage;
    run.offload = {};
    run.offload.optimizer = true;
    run.offload.zenflow = {true, 0.3, 2, 2, 0, true};
    Ledger host_ledger, nvme_ledger;
    const RankResult host = testing::train_mlp(run, comm, host_ledger);
    run.offload.optimizer_nvme = true;
    run.offload.nvme.path = folder.string();
    run.offload.nvme.sub_group_size = 30;
    EXPECT_TRUE(same_bits(testing::train_mlp(run, comm, nvme_ledger).params, host.params)) << "ZenFlow stage " << stage << " rank " << comm.rank();
  }
  comm.barrier();
  EXPECT_TRUE(std::filesystem::is_empty(folder)) << "a swap folder outlived its run";
  comm.barrier();
  if (comm.rank() == 0) std::filesystem::remove_all(folder);
}

INSTANTIATE_TEST_SUITE_P(Models, MpiStages, ::testing::Combine(::testing::Bool(), ::testing::Values(Dtype::kF32, Dtype::kBf16, Dtype::kF16)),
                         [](const auto& p) {
                           return std::string(std::get<0>(p.param) ? "tied_" : "plain_") + dtype_label(std::get<1>(p.param));
                         });

// The GPT and the LLaMA (untied, tied) under MPI: stages bit-identical, and identical to the
// threads backend.
TEST(MpiModels, BitIdenticalAcrossStagesAndBackends) {
  Communicator& comm = world();
  testing::GptRun run;
  const std::optional<LlamaShape> models[] = {std::nullopt, testing::tiny_llama(false), testing::tiny_llama(true)};
  for (const std::optional<LlamaShape>& model : models)
  for (Dtype dtype : {Dtype::kF32, Dtype::kBf16}) {
  run.llama = model;
  run.dtype = dtype;
  std::vector<float> stage0;
  for (int stage = 0; stage <= 3; ++stage) {
    run.stage = stage;
    Ledger ledger;
    const auto params = testing::train_gpt(run, comm, ledger);
    if (stage == 0) {
      stage0 = params;
      ThreadWorld threads(comm.size());
      std::vector<float> on_threads;
      threads.run([&](int r) {
        Ledger l;
        auto c = threads.communicator(r, &l);
        auto p = testing::train_gpt(run, *c, l);
        if (r == 0) on_threads = p;
      });
      EXPECT_TRUE(same_bits(stage0, on_threads)) << run.model_label() << ": mpi and threads backends differ";
    }
    EXPECT_TRUE(same_bits(params, stage0)) << dtype_label(dtype) << " " << run.model_label() << " stage " << stage << " differs from stage 0 under MPI";
  }
  }
}

// Lamb under MPI: its per-tensor sums gathered from real processes and added in rank order give
// every stage and placement (offload_param alone included) the same bits, and the threads' bits.
TEST(MpiLamb, BitIdenticalAcrossStagesPlacementsAndBackends) {
  Communicator& comm = world();
  MlpRun run;
  run.steps = 4;
  run.optimizer = OptimizerKind::kLamb;
  run.lamb.max_coeff = 0.3f;
  run.shape = testing::tied_shape();
  for (Dtype dtype : {Dtype::kF32, Dtype::kBf16}) {
    run.dtype = dtype;
    std::vector<float> stage0;
    for (int placement = 0; placement < 7; ++placement) {  // stages 0-3, 2+opt, 3+opt+param, 3+param
      run.stage = placement <= 3 ? placement : placement == 4 ? 2 : 3;
      run.offload = {};
      run.offload.optimizer = placement == 4 || placement == 5;
      run.offload.params = placement >= 5;
      Ledger ledger;
      const RankResult result = testing::train_mlp(run, comm, ledger);
      if (placement == 0) {
        stage0 = result.params;
        EXPECT_TRUE(same_bits(stage0, threads_result(run, comm.size()))) << "Lamb: mpi and threads differ, " << dtype_label(dtype);
      }
      EXPECT_TRUE(same_bits(result.params, stage0)) << "Lamb " << dtype_label(dtype) << " placement " << placement << " rank " << comm.rank();
    }
  }
}

TEST(MpiErrors, RanksThatDisagreeOnTheModelAllFail) {
  Communicator& comm = world();
  MlpRun run;
  if (comm.rank() == comm.size() - 1) run.shape.widths = {13, 31, 30, 7};
  Ledger ledger;
  try {
    testing::train_mlp(run, comm, ledger);
    FAIL() << "rank " << comm.rank() << " accepted a model the others do not have";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("the ranks disagree on the model"), std::string::npos) << e.what();
  }
  comm.barrier();  // the check left the ranks in step: collectives still line up
}

TEST(MpiErrors, SelfBackendUnderMpirunIsRefused) {
  try {
    make_communicator("self");
    FAIL() << "a self world under mpirun would silently train N separate models";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("use --comm mpi"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zero
