// `zero bench comm`: all-reduce bandwidth of zero's communicator at the sizes gradients are
// reduced in, in both determinism modes, as the ranks of the job see it. Measured as the
// nccl-tests and OSU benchmarks measure it: per size, a few warm-up calls, then rounds of `iters`
// calls between barriers; the time per call is the median round's (a noisy machine's slow round
// does not count), algbw = bytes / time, busbw = algbw * 2(N-1)/N (the bytes each rank's link
// carries in a ring, so a figure comparable across N). Every call's result is checked: each
// element must be the sum of the ranks' values (small integers, exact in f32).
// bench/allreduce_reference.cpp is the same loop over MPI_Allreduce alone, for comparison on the
// same link (bench/comm_link.sh runs both).
#include "cli/bench_comm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "cli/launch.h"
#include "cli/layout.h"
#include "common/error.h"
#include "planner/byte_size.h"

namespace zero::cli {
namespace {

std::vector<std::uint64_t> parse_sizes(const std::string& text) {
  std::vector<std::uint64_t> sizes;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::uint64_t bytes = parse_byte_size(text.substr(at, comma - at), "--sizes");
    if (bytes < 4 || bytes % 4 != 0) throw ConfigError(cat("[cli] --sizes: ", bytes, " bytes is not a whole number of f32 elements (a multiple of 4)"));
    if (bytes > (std::uint64_t{1} << 32)) throw ConfigError(cat("[cli] --sizes: ", text.substr(at, comma - at), " is over 4 GiB; give sizes up to 4GiB"));
    sizes.push_back(bytes);
    at = comma + 1;
  }
  return sizes;
}

// An all-reduce of `data` in place: zero's (the communicator in its current determinism mode) or
// the backend library's own (`reference`, MPI_Allreduce), its result checked: every element must
// be the sum of the ranks' values (small integers, exact in f32).
void checked_all_reduce(Communicator& comm, std::vector<float>& data, bool reference) {
  const float mine = static_cast<float>(comm.rank() + 1);
  const float want = static_cast<float>(comm.size() * (comm.size() + 1) / 2);
  std::fill(data.begin(), data.end(), mine);
  if (!reference) {
    comm.all_reduce(data);
  } else if (!comm.reference_all_reduce(data)) {
    throw ConfigError(cat("[cli] --reference: the ", comm.backend(), " backend has no library all-reduce to time; run under mpirun (--comm mpi)"));
  }
  if (data.front() != want || data.back() != want || data[data.size() / 2] != want) {
    throw Error(cat("[bench] ", reference ? "the reference " : "", "all_reduce of ", data.size(), " floats gave ", data.front(),
                    " where the ranks' sum is ", want));
  }
}

// Seconds per call of one round of `iters` calls, started together (a barrier) and the slowest
// rank's, as the job waits for it.
double round_seconds(Communicator& comm, std::vector<float>& data, int iters, bool reference) {
  comm.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) checked_all_reduce(comm, data, reference);
  std::vector<float> mine = {static_cast<float>(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters)};
  std::vector<float> all(static_cast<std::size_t>(comm.size()));
  comm.all_gather(mine, all);
  return *std::max_element(all.begin(), all.end());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  double seconds = 0;            // per call, the median round's
  double reference_seconds = 0;  // the reference's, rounds alternated with zero's (0: none)
  double ratio = 0;              // the median of the rounds' reference/zero time ratios
};

// 2 warm-up calls each, then `rounds` rounds of zero's calls, each followed by a round of the
// reference's when `reference`: alternated round by round, so a noisy machine's swings fall on
// both alike, and the ratio is taken pair by pair.
Timing time_all_reduce(Communicator& comm, std::vector<float>& data, int iters, int rounds, bool reference) {
  for (int w = 0; w < 2; ++w) {
    checked_all_reduce(comm, data, false);
    if (reference) checked_all_reduce(comm, data, true);
  }
  std::vector<double> zero, ref, ratio;
  for (int r = 0; r < rounds; ++r) {
    zero.push_back(round_seconds(comm, data, iters, false));
    if (!reference) continue;
    ref.push_back(round_seconds(comm, data, iters, true));
    ratio.push_back(ref.back() / zero.back());
  }
  if (!reference) return {median(zero), 0, 0};
  return {median(zero), median(ref), median(ratio)};
}

}  // namespace

std::vector<FlagSpec> bench_comm_flags() {
  return {{"ranks", "ranks (threads in this process, or the mpirun job's size)", true, "2"},
          {"comm", "threads, mpi or auto", true, "auto"},
          {"sizes", "all-reduce sizes in bytes, comma-separated (1MiB, 64MB, 4096)", true, "64KiB,1MiB,4MiB,16MiB,64MiB"},
          {"iters", "calls per round (5 rounds per size, the median round counts)", true, "10"},
          {"determinism", "deterministic, fast or both", true, "both"},
          {"reference", "also time the backend library's own all-reduce (mpi: MPI_Allreduce), round by round between zero's", false, ""}};
}

int bench_comm_main(const std::vector<std::string>& args) {
  Flags flags("zero bench comm", bench_comm_flags(), args);
  if (flags.help()) {
    std::printf("All-reduce bandwidth of zero's communicator (algbw and busbw, as nccl-tests define them), in each\n"
                "determinism mode; bench/comm_link.sh sets it beside MPI_Allreduce's own loop on the same link.\n\n%s",
                flags.usage().c_str());
    return 0;
  }
  const std::vector<std::uint64_t> sizes = parse_sizes(flags.get("sizes"));
  const int iters = static_cast<int>(flags.get_int("iters", 1, 100000));
  const std::string modes = flags.get("determinism");
  std::vector<Determinism> runs;
  if (modes == "both") runs = {Determinism::kDeterministic, Determinism::kFast};
  else runs = {parse_determinism(modes, "--determinism")};
  const bool reference = flags.has("reference");
  int launched = 1;
  const std::string comm_flag = flags.get("comm");
  const bool on_mpi = comm_flag == "mpi" || (comm_flag == "auto" && launched_by_mpi(&launched) && launched > 1);
  if (reference && !on_mpi) {
    throw ConfigError(cat("[cli] --reference times MPI_Allreduce beside zero's all-reduce: it needs MPI ranks (--comm mpi under mpirun), not ",
                          comm_flag == "auto" ? "thread ranks (--comm auto outside mpirun)" : "--comm " + comm_flag));
  }
  planned_world(flags, false);
  return run_ranks(flags, [&](Communicator& comm, Ledger&) {
    const std::vector<RankPlace> places = gather_places(comm);
    if (comm.rank() == 0) {
      std::printf("zero bench comm: all_reduce of f32 on %d ranks (%s), %d calls a round, median of 5 rounds%s\n%s", comm.size(),
                  comm.backend().c_str(), iters, reference ? ", each followed by a round of MPI_Allreduce" : "",
                  describe_layout(places, comm.backend()).c_str());
      std::printf("%12s %14s %12s %12s %12s%s\n", "bytes", "determinism", "time us", "algbw GB/s", "busbw GB/s",
                  reference ? "  MPI busbw  ratio" : "");
    }
    for (std::uint64_t bytes : sizes) {
      std::vector<float> data(bytes / 4);
      for (Determinism d : runs) {
        comm.set_determinism(d);
        const Timing t = time_all_reduce(comm, data, iters, 5, reference);
        const double algbw = static_cast<double>(bytes) / t.seconds / 1e9;
        const double busbw = algbw * 2.0 * (comm.size() - 1) / comm.size();
        if (comm.rank() == 0) {
          std::printf("%12llu %14s %12.1f %12.3f %12.3f", static_cast<unsigned long long>(bytes), determinism_name(d), t.seconds * 1e6, algbw, busbw);
          if (reference) std::printf(" %10.3f %6.2f", busbw * t.seconds / t.reference_seconds, t.ratio);
          std::printf("\n");
          std::fflush(stdout);
        }
      }
    }
    return 0;
  });
}

}  // namespace zero::cli
