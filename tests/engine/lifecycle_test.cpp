// Resources returned: an engine created and destroyed many times in one process (as a notebook
// or an RLHF loop does) gives back every byte to the ledger, on both tiers, and to the allocator:
// the process's resident memory stops growing after the first few cycles.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "comm/thread_world.h"
#include "engine/mlp_run.h"

namespace zero {
namespace {

using testing::MlpRun;

// Resident set size of this process, from /proc/self/statm.
std::uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

struct Cycles {
  std::vector<std::uint64_t> rss;              // after each cycle
  std::vector<std::uint64_t> ledger_leftover;  // bytes still in the ledger after each cycle, both tiers
  std::uint64_t engine_peak = 0;               // the ledger's peak in one cycle, both tiers
};

// `cycles` times: build an engine on `n` thread ranks, train two steps, destroy it.
Cycles create_and_destroy(MlpRun run, int n, int cycles) {
  Cycles out;
  ThreadWorld world(n, {std::chrono::seconds(60), nullptr});
  for (int c = 0; c < cycles; ++c) {
    std::vector<Ledger> ledgers(n);
    world.run([&](int r) {
      auto comm = world.communicator(r, &ledgers[r]);
      testing::train_mlp(run, *comm, ledgers[r]);  // the engine lives and dies in here
    });
    std::uint64_t leftover = 0, peak = 0;
    for (const Ledger& l : ledgers) {
      for (Tier t : {Tier::kDevice, Tier::kHost}) leftover += l.usage(t).total_current, peak += l.usage(t).total_peak;
    }
    out.ledger_leftover.push_back(leftover);
    out.engine_peak = std::max(out.engine_peak, peak);
    out.rss.push_back(resident_bytes());
  }
  return out;
}

// AddressSanitizer (scripts/sanitize.sh) keeps freed memory resident in its quarantine (256 MiB
// by default), so there the resident set grows whatever the engines do; its LeakSanitizer check
// at exit looks for leaks instead.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kResidentSetShowsLeaks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kResidentSetShowsLeaks = false;
#else
constexpr bool kResidentSetShowsLeaks = true;
#endif
#else
constexpr bool kResidentSetShowsLeaks = true;
#endif

class Lifecycle : public ::testing::TestWithParam<int> {};

TEST_P(Lifecycle, FiftyEnginesReturnEveryByteToTheLedgerAndTheAllocator) {
  MlpRun run;
  run.steps = 2;
  run.shape = {{128, 512, 256, 64}, false};  // 200K parameters: ~3 MiB of model state per rank
  switch (GetParam()) {
    case 0: run.stage = 0; break;
    case 1: run.stage = 2; break;
    case 2: run.stage = 3, run.offload.optimizer = true, run.offload.params = true; break;
  }
  const int n = 2, cycles = 50, warmup = 5;
  const Cycles c = create_and_destroy(run, n, cycles);
  for (int i = 0; i < cycles; ++i) EXPECT_EQ(c.ledger_leftover[i], 0u) << "cycle " << i;
  // After the warm-up (allocator arenas, thread stacks, OpenMP), the resident set may wobble but
  // must not grow with the cycles: 45 cycles leaking even a tenth of one engine would exceed this.
  const std::uint64_t growth = c.rss.back() > c.rss[warmup - 1] ? c.rss.back() - c.rss[warmup - 1] : 0;
  const std::uint64_t bound = std::max<std::uint64_t>(c.engine_peak * (cycles - warmup) / 10, 4u << 20);
  if (kResidentSetShowsLeaks) {
    EXPECT_LT(growth, bound) << "resident set grew " << growth << " bytes over " << cycles - warmup
                             << " cycles; one engine's ledger peak is " << c.engine_peak << " bytes";
  }
  EXPECT_GT(c.engine_peak, 2u << 20);  // the engines were big enough for a leak to show
  std::printf("resident set after cycle %d: %.1f MiB, after cycle %d: %.1f MiB (growth bound %.1f MiB); ledger peak per cycle %.1f MiB\n", warmup,
              c.rss[warmup - 1] / 1048576.0, cycles, c.rss.back() / 1048576.0, bound / 1048576.0, c.engine_peak / 1048576.0);
}

std::string config_name(const ::testing::TestParamInfo<int>& p) {
  const char* names[] = {"stage0", "stage2", "stage3_offload"};
  return names[p.param];
}

INSTANTIATE_TEST_SUITE_P(Stages, Lifecycle, ::testing::Values(0, 1, 2), config_name);

}  // namespace
}  // namespace zero
