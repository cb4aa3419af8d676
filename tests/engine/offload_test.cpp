// ZeRO-Offload on thread ranks: bit-identical to the same stage without offload; the delayed
// update equals a plainly written reference of its rule; device and host bytes measured by the
// ledger; device capacity that only offload fits; the timeline; bad input.
#include <gtest/gtest.h>

#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "comm/thread_world.h"
#include "common/error.h"
#include "common/trace.h"
#include "engine/mlp_run.h"
#include "optim/adamw.h"
#include "partition/init.h"

namespace zero {
namespace {

using testing::MlpRun;
using testing::RankResult;
using testing::run_threads;
using testing::same_bits;
using testing::tied_shape;

// Parameterised over the precision: f32, or mixed precision with bf16 or f16 parameters and
// gradients (the host keeps the f32 master and moments and a 16-bit gradient shard).
class OffloadPrecision : public ::testing::TestWithParam<Dtype> {};

// Without the delayed update, offload changes nothing numerically: stages 1, 2, 3 (and stage 3
// with the parameters offloaded too), N = 1, 2, 4, plain and tied, with and without clipping.
TEST_P(OffloadPrecision, BitIdenticalToTheSameStageWithoutOffload) {
  for (int n : {1, 2, 4})
    for (bool tied : {false, true})
      for (float clipping : {0.0f, 0.05f}) {
        MlpRun run;
        run.dtype = GetParam();
        if (tied) run.shape = tied_shape();
        run.clipping = clipping;
        for (int stage = 1; stage <= 3; ++stage) {
          run.stage = stage;
          run.offload = {};
          const auto plain = run_threads(run, n)[0].params;
          for (const char* device : {"cpu", "strict"}) {  // strict: device memory only through the seam
            run.device = device;
            run.offload = {};
            run.offload.optimizer = true;
            EXPECT_TRUE(same_bits(run_threads(run, n)[0].params, plain))
                << "stage " << stage << " N=" << n << " tied=" << tied << " clipping=" << clipping << " " << device;
            if (stage == 3) {
              run.offload.params = true;
              EXPECT_TRUE(same_bits(run_threads(run, n)[0].params, plain)) << "stage 3 + offload_param, N=" << n << " " << device;
              run.offload.optimizer = false;  // offload_param alone, as DeepSpeed allows
              EXPECT_TRUE(same_bits(run_threads(run, n)[0].params, plain)) << "stage 3 + offload_param alone, N=" << n << " " << device;
            }
          }
          run.device = "cpu";
        }
      }
}

// With gradient accumulation, offload lands each stage's reductions on the host as they come
// (stage 1: once per step; stages 2-3: every micro-batch, added on the host in order): the same
// bits as the same stage on the device.
TEST_P(OffloadPrecision, GradientAccumulationMatchesTheSameStage) {
  for (int n : {1, 2, 3})
    for (int stage = 1; stage <= 3; ++stage) {
      MlpRun run;
      run.dtype = GetParam();
      run.global_batch = 36;
      run.micro_batches = 3;
      run.stage = stage;
      const auto plain = run_threads(run, n)[0].params;
      run.offload.optimizer = true;
      EXPECT_TRUE(same_bits(run_threads(run, n)[0].params, plain)) << "stage " << stage << " N=" << n;
      if (stage == 3) {
        run.offload.params = true;
        EXPECT_TRUE(same_bits(run_threads(run, n)[0].params, plain)) << "stage 3+param N=" << n;
      }
    }
}

// The delayed rule, written plainly on one process: the device computes step t's gradient with
// the parameters it holds; the host applies Adam; after the warm-up the device gets the host's
// parameters from before this step's update (one step stale).
std::vector<float> delayed_reference(const MlpRun& run) {
  Mlp mlp(run.shape);
  const FlatLayout layout(mlp.units(), 1);
  std::vector<float> host(layout.padded_numel()), m(host.size()), v(host.size()), grads(host.size());
  for (int u = 0; u < layout.num_units(); ++u)
    init_segments(layout.unit(u), layout.unit_segments(u), run.seed, host.data() + layout.unit(u).flat_offset);
  std::vector<float> device = host;
  const AdamConfig adam = testing::engine_config(run).adam;
  for (int t = 1; t <= run.steps; ++t) {
    mlp.set_batch(mlp_synthetic_batch(run.shape, run.seed, t - 1, 0, run.global_batch));
    UnitViews views(layout);
    std::fill(grads.begin(), grads.end(), 0.0f);
    for (int u = 0; u < layout.num_units(); ++u)
      views.set(u, device.data() + layout.unit(u).flat_offset, grads.data() + layout.unit(u).flat_offset);
    for (int u = 0; u < layout.num_units(); ++u) mlp.forward(u, views);
    for (int u = layout.num_units() - 1; u >= 0; --u) mlp.backward(u, views);
    const std::vector<float> before = host;
    const AdamStep s = adam_step_scalars(adam, t);
    for (int u = 0; u < layout.num_units(); ++u)
      for (const Segment& seg : layout.unit_segments(u)) {
        if (seg.param < 0) continue;
        const std::size_t o = layout.unit(u).flat_offset + seg.offset;
        adam_reference(s, seg.decay, &host[o], &grads[o], &m[o], &v[o], seg.numel);
      }
    device = t <= run.offload.warmup_steps ? host : before;
  }
  std::vector<float> out;
  for (int u = 0; u < layout.num_units(); ++u)
    out.insert(out.end(), host.begin() + layout.unit(u).flat_offset, host.begin() + layout.unit(u).flat_offset + layout.unit(u).numel);
  return out;
}

TEST(Offload, DelayedUpdateFollowsTheDelayedRule) {
  for (bool tied : {false, true})
    for (int stage = 1; stage <= 3; ++stage) {
      MlpRun run;
      if (tied) run.shape = tied_shape();
      run.stage = stage;
      run.offload.optimizer = true;
      run.offload.delayed_update = true;
      run.offload.warmup_steps = 3;
      const auto engine = run_threads(run, 1)[0].params;
      EXPECT_TRUE(same_bits(engine, delayed_reference(run))) << "stage " << stage << " tied=" << tied;
      // And on more ranks, every stage agrees with every other, bit for bit.
      const auto two = run_threads(run, 2)[0].params;
      run.stage = 2;
      EXPECT_TRUE(same_bits(two, run_threads(run, 2)[0].params)) << "stage " << stage << " N=2 differs from stage 2";
    }
}

// The delayed update with gradient clipping: the norm and the scaling act on this step's host
// gradients while the CPU still runs the previous step's Adam on the other buffer.
TEST(Offload, DelayedUpdateWithClipping) {
  MlpRun run;
  run.clipping = 0.05f;
  run.offload.optimizer = true;
  run.offload.delayed_update = true;
  run.offload.warmup_steps = 2;
  std::vector<float> stage1;
  for (int stage = 1; stage <= 3; ++stage) {
    run.stage = stage;
    const auto ranks = run_threads(run, 2);
    for (double norm : ranks[0].grad_norms) EXPECT_GT(norm, run.clipping) << "every step clips";
    if (stage == 1) stage1 = ranks[0].params;
    EXPECT_TRUE(same_bits(ranks[0].params, stage1)) << "stage " << stage;
  }
}

// A one-rank transport whose reduce-scatter fails: offload must surface the error, not run Adam
// on a partial gradient.
class FailingReduceScatter final : public Transport {
 public:
  FailingReduceScatter() : Transport(0, 1) {}
  std::string backend() const override { return "failing"; }
  void reduce_scatter(const void*, void*, std::size_t, Dtype) override { throw CommError("[comm] injected failure"); }
  void all_gather(const void* send, void* recv, std::size_t bytes) override {
    if (send != recv) std::memmove(recv, send, bytes);
  }
  void broadcast(void*, std::size_t, int) override {}
  void barrier() override {}
};

TEST(Offload, AFailedReductionSurfaces) {
  for (bool delayed : {false, true}) {
    MlpRun run;
    run.stage = 2;
    run.offload.optimizer = true;
    run.offload.delayed_update = delayed;
    Ledger ledger;
    Communicator comm(std::make_unique<FailingReduceScatter>());
    EXPECT_THROW(testing::train_mlp(run, comm, ledger), CommError) << "delayed=" << delayed;
  }
}

// The delayed update is not the undelayed one: the test above would pass vacuously otherwise.
TEST(Offload, DelayedUpdateChangesTheTrajectory) {
  MlpRun run;
  run.stage = 2;
  run.offload.optimizer = true;
  const auto undelayed = run_threads(run, 2)[0].params;
  run.offload.delayed_update = true;
  run.offload.warmup_steps = 3;
  EXPECT_FALSE(same_bits(run_threads(run, 2)[0].params, undelayed));
}

std::uint64_t cat_bytes(const TierUsage& u, Category c, bool peak = false) {
  return (peak ? u.peak : u.current)[static_cast<int>(c)];
}

// Device and host bytes per rank, from the ledger. Stages 1-2 with optimizer offload hold only
// the parameters (bΨ, b = 4 in f32, 2 in mixed precision) plus bounded buffers on the device;
// stage 3 with both offloads only what is in flight. The host holds 16Ψ/N: f32 master, m, v and
// the gradient shard in f32 (4 + 4 + 4 + 4); in mixed precision the f32 master, m and v
// (optimizer state, 12) with a 16-bit gradient shard and the 16-bit parameters Adam writes in
// the same pass (2 + 2). The link carries the gradient shard to the host and the updated
// parameters back: bΨ/N each way per step.
TEST_P(OffloadPrecision, DeviceAndHostBytesByTheLedger) {
  const Dtype dtype = GetParam();
  const bool mixed = dtype != Dtype::kF32;
  const double b = static_cast<double>(dtype_bytes(dtype));
  for (int n : {2, 4})
    for (int stage = 1; stage <= 3; ++stage)
      for (bool params : {false, true}) {
        if (params && stage != 3) continue;
        MlpRun run;
        run.steps = 2;
        run.stage = stage;
        run.dtype = dtype;
        run.offload.optimizer = true;
        run.offload.params = params;
        const RankResult r = run_threads(run, n)[0];
        const double psi = static_cast<double>(r.numel), pad = 16.0 * (n - 1) * r.units;
        const std::uint64_t two_units = static_cast<std::uint64_t>(b) * (r.largest_unit + r.second_unit);
        const std::string what = std::string(dtype_label(dtype)) + " stage " + std::to_string(stage) + (params ? "+param" : "") +
                                 " N=" + std::to_string(n);
        EXPECT_NEAR(static_cast<double>(r.host.total_current), 16 * psi / n, pad) << what;
        EXPECT_EQ(cat_bytes(r.host, Category::kOptimizerState), (mixed ? 12 : 8) * r.padded / n) << what;
        EXPECT_EQ(cat_bytes(r.host, Category::kGradients), static_cast<std::uint64_t>(b) * r.padded / n) << what;
        // device, after the step: parameters only (whole, shard, or none), and stage 1's whole
        // gradients (stage 1 keeps them, offload or not)
        const double device_params = stage < 3 ? b * psi : (params ? 0.0 : b * psi / n);
        const double device_grads = stage == 1 ? b * psi : 0.0;
        EXPECT_NEAR(static_cast<double>(r.device.total_current), device_params + device_grads, 2 * pad) << what;
        EXPECT_EQ(cat_bytes(r.device, Category::kOptimizerState, true), 0u) << what;
        // transient buffers are bounded: at most two whole unit gradients, two gathered units
        if (stage >= 2) { EXPECT_LE(cat_bytes(r.device, Category::kGradients, true), two_units) << what; }
        EXPECT_LE(cat_bytes(r.device, Category::kGatheredParameters, true), two_units) << what;
        EXPECT_EQ(r.step_to_host, static_cast<std::uint64_t>(b) * r.padded / n) << what;
        if (!params) { EXPECT_EQ(r.step_to_device, static_cast<std::uint64_t>(b) * r.padded / n) << what; }
        std::printf("[ measured ] %s: device peak %llu B (params %.0f B by formula), host %llu B (16Ψ/N = %.0f B), "
                    "link per step %llu B to host, %llu B to device\n",
                    what.c_str(), static_cast<unsigned long long>(r.device.total_peak), device_params,
                    static_cast<unsigned long long>(r.host.total_current), 16 * psi / n,
                    static_cast<unsigned long long>(r.step_to_host), static_cast<unsigned long long>(r.step_to_device));
      }
}

// offload_param alone: the parameter shard is the host's (and only it), the optimizer's state
// and the gradient shard the device's; each part's update goes through a staged device slice.
TEST_P(OffloadPrecision, ParamOffloadAloneBytesByTheLedger) {
  const Dtype dtype = GetParam();
  const bool mixed = dtype != Dtype::kF32;
  const std::uint64_t b = dtype_bytes(dtype);
  for (int n : {1, 2, 4}) {
    MlpRun run;
    run.steps = 2;
    run.stage = 3;
    run.dtype = dtype;
    run.offload.params = true;
    const RankResult r = run_threads(run, n)[0];
    const std::string what = cat(dtype_label(dtype), " N=", n);
    const std::uint64_t shard = r.padded / n;
    EXPECT_EQ(r.host.total_current, b * shard) << what;
    EXPECT_EQ(cat_bytes(r.host, Category::kParameters), b * shard) << what;
    EXPECT_EQ(cat_bytes(r.device, Category::kOptimizerState), (mixed ? 12 : 8) * shard) << what;
    EXPECT_EQ(cat_bytes(r.device, Category::kGradients), b * shard) << what;
    EXPECT_EQ(cat_bytes(r.device, Category::kParameters), 0u) << what << ": no parameters stay on the device between steps";
    // the staged slice: one part at a time, at most the largest unit's slice
    EXPECT_LE(cat_bytes(r.device, Category::kParameters, true), (mixed ? b : 4) * r.largest_unit / n) << what;
    EXPECT_GT(r.step_to_host, 0u) << what << ": the updated parameters go home";
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, OffloadPrecision, ::testing::Values(Dtype::kF32, Dtype::kBf16, Dtype::kF16),
                         [](const auto& p) { return std::string(dtype_label(p.param)); });

// A device that only offload fits: without offload the engine fails at construction, before
// the first step, naming what it was allocating; with offload it trains.
TEST(Offload, DeviceCapacityThatOnlyOffloadFits) {
  MlpRun run;
  run.stage = 2;
  run.steps = 2;
  const std::uint64_t capacity = 4 * 1800 + 4 * 2 * 1100;  // whole parameters (Ψ = 1572) and two units, not Adam's state
  for (bool offload : {false, true}) {
    run.offload.optimizer = offload;
    ThreadWorld world(2);
    std::vector<std::string> errors(2);
    try {
      world.run([&](int r) {
        Ledger ledger;
        ledger.set_capacity(Tier::kDevice, capacity);
        auto comm = world.communicator(r, &ledger);
        try {
          testing::train_mlp(run, *comm, ledger);
        } catch (const OutOfMemoryError& e) {
          errors[r] = e.what();
          throw;
        }
      });
    } catch (const OutOfMemoryError&) {
    }
    if (offload) {
      EXPECT_EQ(errors[0], "") << "offload should fit";
    } else {
      EXPECT_NE(errors[0].find("on the device tier"), std::string::npos) << errors[0];
      EXPECT_NE(errors[0].find("offload"), std::string::npos) << "the error says what would fit: " << errors[0];
    }
  }
}

TEST(Offload, HostThatCannotHoldTheStateIsRefusedBeforeAllocating) {
  MlpRun run;
  run.stage = 2;
  run.offload.optimizer = true;
  Ledger ledger;
  ledger.set_capacity(Tier::kHost, 1000);
  auto comm = make_communicator("self");
  try {
    testing::train_mlp(run, *comm, ledger);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("the offloaded state needs"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ledger.usage(Tier::kHost).total_peak, 0u);
  EXPECT_EQ(ledger.usage(Tier::kDevice).total_peak, 0u);
}

TEST(Offload, BadCombinationsAreRefused) {
  auto expect_error = [](MlpRun run, const std::string& needle) {
    Ledger ledger;
    auto comm = make_communicator("self");
    try {
      testing::train_mlp(run, *comm, ledger);
      FAIL() << "expected ConfigError with '" << needle << "'";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  MlpRun run;
  run.offload.optimizer = true;
  run.stage = 0;
  expect_error(run, "offload_optimizer offloads the optimizer state, which needs ZeRO stage 1, 2 or 3");
  run.stage = 2;
  run.offload.params = true;
  expect_error(run, "offload_param offloads parameters, which only stage 3 shards");
  run.stage = 3;
  run.offload.delayed_update = true;
  expect_error(run, "not supported yet");
}

// Drops CAP_IPC_LOCK from this thread's effective set (a root process ignores RLIMIT_MEMLOCK
// while it has it) and lowers RLIMIT_MEMLOCK, so that mlock fails; restores both on destruction.
class NoPinning {
 public:
  NoPinning() {
    getrlimit(RLIMIT_MEMLOCK, &saved_limit_);
    rlimit tiny{4096, saved_limit_.rlim_max};
    setrlimit(RLIMIT_MEMLOCK, &tiny);
    syscall(SYS_capget, &header_, saved_caps_);
    __user_cap_data_struct caps[2] = {saved_caps_[0], saved_caps_[1]};
    caps[0].effective &= ~(1u << CAP_IPC_LOCK);
    syscall(SYS_capset, &header_, caps);
  }
  ~NoPinning() {
    syscall(SYS_capset, &header_, saved_caps_);
    setrlimit(RLIMIT_MEMLOCK, &saved_limit_);
  }

 private:
  rlimit saved_limit_{};
  __user_cap_header_struct header_{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct saved_caps_[2]{};
};

// Whether mlock can fail here: the sanitizer runtimes (scripts/sanitize.sh) intercept mlock as a
// no-op that always succeeds, and there the fallback cannot be reached.
bool mlock_can_fail() {
  NoPinning no_pinning;
  std::vector<char> probe(1 << 20, 1);
  if (mlock(probe.data(), probe.size()) != 0) return true;
  munlock(probe.data(), probe.size());
  return false;
}

// pin_memory where page-locking is impossible: one warning, pageable memory, training goes on.
TEST(Offload, PinMemoryFallsBackToPageableWithAWarning) {
  if (!mlock_can_fail()) GTEST_SKIP() << "mlock of 1 MiB succeeds under RLIMIT_MEMLOCK 4 KiB without CAP_IPC_LOCK (a sanitizer runtime?)";
  MlpRun run;
  run.stage = 2;
  run.steps = 2;
  run.offload.optimizer = true;
  const auto plain = run_threads(run, 1)[0].params;
  run.offload.pin_memory = true;
  std::vector<float> pinned;
  ::testing::internal::CaptureStderr();
  {
    NoPinning no_pinning;
    Ledger ledger;
    auto comm = make_communicator("self");
    pinned = testing::train_mlp(run, *comm, ledger).params;
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("pin_memory: cannot page-lock"), std::string::npos) << err;
  EXPECT_NE(err.find("using pageable memory"), std::string::npos) << err;
  EXPECT_EQ(err.find("pin_memory", err.find("pin_memory") + 1), std::string::npos) << "warned more than once: " << err;
  EXPECT_TRUE(same_bits(pinned, plain));
}

// The timeline: every lane records, and the CPU optimizer's overlap with compute is a fraction.
TEST(Offload, TraceHasEveryLane) {
  Ledger ledger;
  auto comm = make_communicator("self");
  Tracer tracer(0);
  comm->set_tracer(&tracer);
  MlpRun run;
  run.stage = 2;
  run.offload.optimizer = true;
  Mlp mlp(run.shape);
  EngineConfig config = testing::engine_config(run);
  config.tracer = &tracer;
  Engine engine(config, mlp, *comm, ledger);
  for (int s = 0; s < 3; ++s) {
    mlp.set_batch(mlp_synthetic_batch(run.shape, 1, s, 0, 8));
    engine.train_step();
  }
  const auto events = tracer.events();
  for (Lane lane : {Lane::kCompute, Lane::kComm, Lane::kCopy, Lane::kOptimizer}) {
    EXPECT_TRUE(std::any_of(events.begin(), events.end(), [&](const TraceEvent& e) { return e.lane == static_cast<int>(lane); }))
        << lane_name(lane);
  }
  const double f = overlap_fraction(events, 0, Lane::kOptimizer, Lane::kCompute);
  EXPECT_GE(f, 0.0);
  EXPECT_LE(f, 1.0);
  const std::string json = chrome_trace_json(events);
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(json.find("cpu optimizer"), std::string::npos);
}

}  // namespace
}  // namespace zero
