// The NVMe tier on thread ranks: the optimizer state in swap files gives the same weights, bit
// for bit, as host offload and as no offload (stages 1-3, f32 and bf16, sub-groups that cut
// parameters anywhere, one to four buffers), and ZenFlow on it as ZenFlow on the host; the
// ledger's nvme tier holds the state and the host tier only the buffers; every swap folder is
// gone afterwards; bad settings are refused.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "common/error.h"
#include "engine/mlp_run.h"
#include "io/async_file.h"

namespace zero {
namespace {

namespace fs = std::filesystem;
using testing::MlpRun;
using testing::run_threads;
using testing::same_bits;

// A fresh swap folder for one test on the disk the tests run on (the build tree's).
struct NvmeFolder {
  explicit NvmeFolder(const std::string& name) : path(fs::absolute(cat("nvme-test-", ::getpid(), "-", name))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~NvmeFolder() { fs::remove_all(path); }
  fs::path path;
};

OffloadOptions nvme_offload(const fs::path& folder, std::size_t sub_group, int buffers) {
  OffloadOptions o;
  o.optimizer = true;
  o.optimizer_nvme = true;
  o.nvme.path = folder.string();
  o.nvme.sub_group_size = sub_group;
  o.nvme.buffer_count = buffers;
  o.nvme.block_size = 4096;  // several requests per sub-group, several in flight
  o.nvme.queue_depth = 4;
  return o;
}

MlpRun three_steps(Dtype dtype, int stage) {
  MlpRun run;
  run.dtype = dtype;
  run.steps = 3;
  run.stage = stage;
  return run;
}

class NvmePrecision : public ::testing::TestWithParam<Dtype> {};

// Sub-groups of 7 elements cut every parameter at odd places (and leave unaligned file
// stretches); 1, 2 and 4 buffers run the pipeline with no overlap, reads ahead, and a write in
// flight beside reads ahead. Stage 3 also with its parameter shard on the host (offload_param).
TEST_P(NvmePrecision, BitIdenticalToHostOffloadAndNoOffload) {
  const NvmeFolder folder("same-bits");
  for (int stage = 1; stage <= 3; ++stage) {
    MlpRun run;
    run.dtype = GetParam();
    run.steps = 4;
    run.stage = stage;
    const auto plain = run_threads(run, 2)[0].params;
    run.offload.optimizer = true;
    const auto host = run_threads(run, 2)[0].params;
    EXPECT_TRUE(same_bits(host, plain)) << "stage " << stage;
    for (auto [sub_group, buffers] : {std::pair<std::size_t, int>{7, 1}, {7, 2}, {7, 4}, {1'000'000'000, 4}}) {
      run.offload = nvme_offload(folder.path, sub_group, buffers);
      EXPECT_TRUE(same_bits(run_threads(run, 2)[0].params, plain)) << "stage " << stage << " sub-group " << sub_group << " buffers " << buffers;
    }
    if (stage == 3) {
      run.offload.params = true;
      EXPECT_TRUE(same_bits(run_threads(run, 2)[0].params, plain)) << "stage 3 + offload_param cpu";
    }
    EXPECT_TRUE(fs::is_empty(folder.path)) << "a swap folder outlived its run";
  }
}

// Clipping (Adam after the global norm) and gradient accumulation (the host adds micro-batches).
TEST_P(NvmePrecision, ClippingAndAccumulationMatch) {
  const NvmeFolder folder("accumulation");
  MlpRun run = three_steps(GetParam(), 2);
  run.clipping = 0.05f;
  run.global_batch = 36;
  run.micro_batches = 3;
  const auto plain = run_threads(run, 3)[0].params;
  run.offload = nvme_offload(folder.path, 50, 3);
  EXPECT_TRUE(same_bits(run_threads(run, 3)[0].params, plain));
}

// offload_param "nvme" (stage 3): the parameter slices in a swap file too, read through 2 to 5
// buffers (2: no read ahead beside the window; 5: DeepSpeed's default), with zero's next-unit
// prefetch, a bucket that reads several units ahead, persistent units (never on disk) and
// gradient accumulation (every slice read twice per micro-batch); and with the optimizer on the
// host (offload_optimizer "cpu") instead of NVMe.
TEST_P(NvmePrecision, ParametersOnDiskBitIdentical) {
  const NvmeFolder folder("params");
  MlpRun run = three_steps(GetParam(), 3);
  run.micro_batches = 2;
  const auto plain = run_threads(run, 2)[0].params;
  run.offload = nvme_offload(folder.path, 7, 2);
  run.offload.params = true;
  const auto host = run_threads(run, 2)[0].params;
  EXPECT_TRUE(same_bits(host, plain)) << "offload_param cpu";
  run.offload.params_nvme = true;
  run.offload.param_nvme.path = folder.path.string();
  for (int buffers : {2, 5}) {
    run.offload.param_nvme.buffer_count = buffers;
    run.stage3 = {};
    EXPECT_TRUE(same_bits(run_threads(run, 2)[0].params, plain)) << "buffers " << buffers;
    run.stage3.prefetch_bucket = 1'000'000;
    run.stage3.persistence_threshold = 40;
    EXPECT_TRUE(same_bits(run_threads(run, 2)[0].params, plain)) << "bucket, persistence, buffers " << buffers;
  }
  run.offload.optimizer_nvme = false;  // the optimizer on the host, the parameters on disk
  run.stage3 = {};
  EXPECT_TRUE(same_bits(run_threads(run, 2)[0].params, plain)) << "offload_optimizer cpu";
  EXPECT_TRUE(fs::is_empty(folder.path)) << "a swap folder outlived its run";
}

INSTANTIATE_TEST_SUITE_P(Dtypes, NvmePrecision, ::testing::Values(Dtype::kF32, Dtype::kBf16),
                         [](const auto& p) { return std::string(dtype_label(p.param)); });

// The ledger: the swap file's bytes on the nvme tier (masters 4 bytes an element, in the
// parameters' category in f32 and the optimizer state's in mixed precision; moments 8), and on
// the host only the gradient shard and buffer_count sub-group buffers (12 bytes an element, and
// the 16-bit parameters of a sub-group in mixed precision). Figures from the layout's shard size.
TEST(NvmeLedger, StateOnDiskBuffersOnHost) {
  const NvmeFolder folder("ledger");
  for (Dtype dtype : {Dtype::kF32, Dtype::kBf16}) {
    MlpRun run;
    run.dtype = dtype;
    run.steps = 1;
    run.stage = 2;
    constexpr std::size_t kSubGroup = 40;
    constexpr int kBuffers = 3;
    run.offload = nvme_offload(folder.path, kSubGroup, kBuffers);
    const auto r = run_threads(run, 2)[0];
    const std::uint64_t shard = r.padded / 2, width = dtype_bytes(dtype);
    const auto at = [](const TierUsage& t, Category c) { return t.current[static_cast<int>(c)]; };
    const Category master = dtype == Dtype::kF32 ? Category::kParameters : Category::kOptimizerState;
    EXPECT_EQ(r.nvme.total_current, 12 * shard) << dtype_label(dtype);
    EXPECT_EQ(at(r.nvme, master), (master == Category::kOptimizerState ? 12 : 4) * shard);
    EXPECT_EQ(at(r.host, Category::kGradients), width * shard);
    EXPECT_EQ(at(r.host, Category::kOptimizerState), kBuffers * 12 * kSubGroup);
    EXPECT_EQ(at(r.host, Category::kParameters), dtype == Dtype::kF32 ? 0 : kBuffers * width * kSubGroup);
  }
}

// offload_param "nvme": the parameter file on the nvme tier (each slice from an aligned offset),
// and on the host the parameter buffers of the largest slice (beside the optimizer's): no shard.
TEST(NvmeLedger, ParameterSlicesOnDiskBuffersOnHost) {
  const NvmeFolder folder("param-ledger");
  for (Dtype dtype : {Dtype::kF32, Dtype::kBf16}) {
    MlpRun run = three_steps(dtype, 3);
    run.steps = 1;
    constexpr std::size_t kSubGroup = 40;
    constexpr int kBuffers = 3, kParamBuffers = 4;
    run.offload = nvme_offload(folder.path, kSubGroup, kBuffers);
    run.offload.params = run.offload.params_nvme = true;
    run.offload.param_nvme.path = folder.path.string();
    run.offload.param_nvme.buffer_count = kParamBuffers;
    const auto r = run_threads(run, 2)[0];
    const FlatLayout layout(Mlp(run.shape).units(), 2);
    const std::uint64_t width = dtype_bytes(dtype);
    std::uint64_t file = 0, largest = 0;
    for (int u = 0; u < layout.num_units(); ++u) {
      file += (layout.unit(u).slice * width + 4095) / 4096 * 4096;
      largest = std::max<std::uint64_t>(largest, layout.unit(u).slice);
    }
    const auto at = [](const TierUsage& t, Category c) { return t.current[static_cast<int>(c)]; };
    const std::uint64_t masters = dtype == Dtype::kF32 ? 4 * layout.shard_numel() : 0;  // f32 masters count as parameters
    EXPECT_EQ(at(r.nvme, Category::kParameters), file + masters) << dtype_label(dtype);
    EXPECT_EQ(at(r.host, Category::kParameters), kParamBuffers * largest * width + (dtype == Dtype::kF32 ? 0 : kBuffers * width * kSubGroup));
  }
}

// ---- ZenFlow on the NVMe tier (optimizer_zenflow_nvme.cpp) ----

// ZenFlow's options as zenflow.h names them: {enabled, topk_ratio, select_interval, update_interval,
// full_warm_up_rounds, overlap_step}.
OffloadOptions with_zenflow(OffloadOptions o, const ZenflowOptions& z) {
  o.zenflow = z;
  return o;
}

// The same weights, bit for bit, as ZenFlow with its state in host memory (the math is the same;
// only where the state lives differs), and at every stage (1-3: the same shards, so the same
// columns and the same arithmetic) as at stage 1, on 2 thread ranks, over 7 steps: a
// warm-up step, selections at steps 1 and 4, the CPU at steps 2, 3, 4 and 6 (steps 1 and 5 sum
// their gradients on disk for the next); overlapped, selections and the CPU every 2 steps (a
// column leaves the selection while the CPU's result is in flight; the last result applied by
// synchronize() at the end); and the CPU every step (nothing summed, no second stretch; the
// device's moments restarted every 2 steps, else the device's Adam would be the CPU's).
// Sub-groups of 7 elements cut the columns anywhere; 3 buffers read ahead beside a write.
// In f32 and, at stage 1, bf16 (16-bit parameters and gradients, the sums and the masters f32 on
// both tiers; zenflow_test checks bf16's stages against each other), bf16 on the strict device too.
TEST(NvmeZenflow, BitIdenticalToZenflowOnTheHost) {
  const NvmeFolder folder("zenflow");
  for (Dtype dtype : {Dtype::kF32, Dtype::kBf16})
  for (const ZenflowOptions& z : {ZenflowOptions{true, 0.3, 4, 2, 1, false}, ZenflowOptions{true, 0.3, 2, 2, 0, true},
                                  ZenflowOptions{true, 0.5, 2, 1, 0, false}}) {
    MlpRun run;
    run.dtype = dtype;
    run.steps = 7;
    std::vector<float> reference;  // host ZenFlow at stage 1: every stage and tier gives its bits
    for (int stage = 1; stage <= (dtype == Dtype::kF32 ? 3 : 1); ++stage) {
      run.stage = stage;
      run.offload = {};
      run.offload.optimizer = true;
      run.offload.zenflow = z;
      const std::string what = cat(dtype_label(dtype), " stage ", stage, " update_interval ", z.update_interval, z.overlap_step ? " overlapped" : "");
      const auto host = run_threads(run, 2)[0].params;
      if (stage == 1) reference = host;
      EXPECT_TRUE(same_bits(host, reference)) << what << ", host ZenFlow against stage 1's";
      if (dtype != Dtype::kF32) {  // 16-bit columns through the device layer's host-staged fallback, as on a GPU
        run.device = "strict";
        EXPECT_TRUE(same_bits(run_threads(run, 2)[0].params, reference)) << what << ", host ZenFlow on the strict device";
        run.device = "cpu";
      }
      run.offload = with_zenflow(nvme_offload(folder.path, 7, 3), z);
      EXPECT_TRUE(same_bits(run_threads(run, 2)[0].params, reference)) << what << ", on NVMe";
    }
    run.offload.zenflow.enabled = false;
    EXPECT_FALSE(same_bits(run_threads(run, 2)[0].params, reference)) << "ZenFlow must differ from plain NVMe offload";
  }
  EXPECT_TRUE(fs::is_empty(folder.path)) << "a swap folder outlived its run";
}

// overlap_step with a read-out mid-run (Engine::synchronize, as full_parameters does): the CPU's
// result reaches the parameters early and the device's columns enter the masters, which the next
// CPU update starts from, on the disk as in host memory (the selection changes after each sync).
TEST(NvmeZenflow, MidRunSynchronizeKeepsHostZenflowsBits) {
  const NvmeFolder folder("zenflow-sync");
  const ZenflowOptions z{true, 0.3, 2, 2, 0, true};
  MlpRun run;
  run.steps = 9;
  run.stage = 2;
  run.synchronize_every = 3;
  run.offload = {};
  run.offload.optimizer = true;
  run.offload.zenflow = z;
  const auto host = run_threads(run, 2)[0].params;
  run.offload = with_zenflow(nvme_offload(folder.path, 7, 3), z);
  EXPECT_TRUE(same_bits(run_threads(run, 2)[0].params, host)) << "ZenFlow on NVMe with a synchronize every 3 steps";
  run.synchronize_every = 0;
  EXPECT_FALSE(same_bits(run_threads(run, 2)[0].params, host)) << "the mid-run synchronize must matter here, or this tests nothing";
}

// The ledger: the swap file holds the CPU's state, masters (the parameters' category in f32), the
// moments and the summed gradient (4 + 8 + 4 bytes an element); host memory holds the step's
// gradient shard and the buffers alone: 3 * 4 bytes and 4 bytes (the sum's) a sub-group element
// per buffer, where host ZenFlow holds its state and one or two sums (overlap_step) of the shard.
TEST(NvmeLedger, ZenflowStateOnDiskBuffersOnHost) {
  const NvmeFolder folder("zenflow-ledger");
  constexpr std::size_t kSubGroup = 40;
  constexpr int kBuffers = 3;
  const auto at = [](const TierUsage& t, Category c) { return t.peak[static_cast<int>(c)]; };
  for (bool overlap : {false, true}) {
    MlpRun run;
    run.steps = 3;
    run.stage = 2;
    const ZenflowOptions z{true, 0.3, 2, 2, 0, overlap};
    run.offload = with_zenflow(nvme_offload(folder.path, kSubGroup, kBuffers), z);
    const auto r = run_threads(run, 2)[0];
    const std::uint64_t shard = r.padded / 2;
    EXPECT_EQ(r.nvme.total_peak, 16 * shard);
    EXPECT_EQ(at(r.nvme, Category::kParameters), 4 * shard);
    EXPECT_EQ(at(r.nvme, Category::kOptimizerState), 8 * shard);
    EXPECT_EQ(at(r.nvme, Category::kGradients), 4 * shard);
    EXPECT_EQ(at(r.host, Category::kOptimizerState), kBuffers * 12 * kSubGroup);
    EXPECT_EQ(at(r.host, Category::kGradients), 4 * shard + kBuffers * 4 * kSubGroup);
    EXPECT_EQ(at(r.host, Category::kParameters), 0u);
    run.offload = {};
    run.offload.optimizer = true;
    run.offload.zenflow = z;
    const auto host = run_threads(run, 2)[0];
    EXPECT_EQ(at(host.host, Category::kGradients), (overlap ? 3 : 2) * 4 * shard);
    EXPECT_EQ(at(host.host, Category::kOptimizerState) + at(host.host, Category::kParameters), 12 * shard);
  }
}

// The host-memory check made before anything is allocated counts what the ledger then holds: an
// engine is built under a host capacity of a trained run's host peak, and one byte less is refused
// by the check (not by an allocation), for ZenFlow on each tier, with and without its sum or overlap.
TEST(NvmeLedger, ZenflowHostCheckIsTheLedgersPeak) {
  const NvmeFolder folder("zenflow-host-check");
  for (bool on_nvme : {false, true})
    for (const ZenflowOptions& z : {ZenflowOptions{true, 0.3, 2, 2, 0, false}, ZenflowOptions{true, 0.3, 2, 2, 0, true},
                                    ZenflowOptions{true, 0.3, 1, 1, 0, false}}) {
      MlpRun run;
      run.steps = 2;
      run.stage = 2;
      run.offload.optimizer = true;
      if (on_nvme) run.offload = nvme_offload(folder.path, 40, 3);
      run.offload.zenflow = z;
      const std::string what = cat(on_nvme ? "nvme" : "host", " update_interval ", z.update_interval, z.overlap_step ? " overlapped" : "");
      auto comm = make_communicator("self");
      Ledger trained;
      const std::uint64_t peak = testing::train_mlp(run, *comm, trained).host.total_peak;  // before the read-out of the weights
      const auto build = [&](std::uint64_t capacity) {
        Ledger ledger;
        ledger.set_capacity(Tier::kHost, capacity);
        Mlp mlp(run.shape);
        Engine engine(testing::engine_config(run), mlp, *comm, ledger);
      };
      EXPECT_NO_THROW(build(peak)) << what;
      try {
        build(peak - 1);
        ADD_FAILURE() << what << ": no error one byte short";
      } catch (const OutOfMemoryError& e) {
        EXPECT_NE(std::string(e.what()).find("the offloaded state needs"), std::string::npos) << what << ": " << e.what();
      }
    }
}

EngineConfig nvme_config(const OffloadOptions& o) {
  MlpRun run;
  run.stage = 2;
  run.offload = o;
  return testing::engine_config(run);
}

std::string engine_error(const EngineConfig& c) {
  try {
    Ledger ledger;
    auto comm = make_communicator("self");
    Mlp mlp(MlpShape{});
    Engine engine(c, mlp, *comm, ledger);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(NvmeErrors, BadSettingsAreRefusedNamingTheKey) {
  const NvmeFolder folder("errors");
  OffloadOptions o = nvme_offload(folder.path, 100, 2);
  o.nvme.path.clear();
  EXPECT_NE(engine_error(nvme_config(o)).find("offload_optimizer.nvme_path is missing"), std::string::npos);
  o = nvme_offload(folder.path / "missing", 100, 2);
  const std::string missing = engine_error(nvme_config(o));
  EXPECT_NE(missing.find((folder.path / "missing").string()), std::string::npos) << missing;
  EXPECT_NE(missing.find("No such file"), std::string::npos) << missing;
  o = nvme_offload(folder.path, 100, 2);
  o.delayed_update = true;
  EXPECT_NE(engine_error(nvme_config(o)).find("delayed_update with device \"nvme\" is not supported"), std::string::npos)
      << engine_error(nvme_config(o));
  EngineConfig lamb = nvme_config(nvme_offload(folder.path, 100, 2));
  lamb.optimizer = OptimizerKind::kLamb;
  EXPECT_NE(engine_error(lamb).find("Lamb with offload_optimizer.device \"nvme\""), std::string::npos) << engine_error(lamb);
  // offload_param "nvme": a buffer smaller than a unit slice (both numbers named), a missing folder.
  EngineConfig params = nvme_config(nvme_offload(folder.path, 100, 2));
  params.stage = 3;
  params.offload.params = params.offload.params_nvme = true;
  params.offload.param_nvme.path = folder.path.string();
  params.offload.param_nvme.buffer_size = 10;
  const FlatLayout one_rank(Mlp(MlpShape{}).units(), 1);
  std::size_t largest = 0;
  for (int u = 0; u < one_rank.num_units(); ++u) largest = std::max(largest, one_rank.unit(u).slice);
  EXPECT_NE(engine_error(params).find(cat("buffer_size is 10 elements, smaller than the largest unit slice this rank holds (", largest)),
            std::string::npos)
      << engine_error(params);
  params.offload.param_nvme.buffer_size = 100'000'000;
  params.offload.param_nvme.path = (folder.path / "missing").string();
  EXPECT_NE(engine_error(params).find("No such file"), std::string::npos) << engine_error(params);
  EXPECT_TRUE(fs::is_empty(folder.path));
}

}  // namespace
}  // namespace zero
