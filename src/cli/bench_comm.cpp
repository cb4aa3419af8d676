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

// Seconds per all_reduce of `data`, the median of `rounds` rounds of `iters` calls.
double time_all_reduce(Communicator& comm, std::vector<float>& data, int iters, int rounds) {
  const float mine = static_cast<float>(comm.rank() + 1);
  const float want = static_cast<float>(comm.size() * (comm.size() + 1) / 2);
  auto run = [&] {
    std::fill(data.begin(), data.end(), mine);
    comm.all_reduce(data);
    if (data.front() != want || data.back() != want || data[data.size() / 2] != want) {
      throw Error(cat("[bench] all_reduce of ", data.size(), " floats gave ", data.front(), " where the ranks' sum is ", want));
    }
  };
  for (int w = 0; w < 2; ++w) run();
  std::vector<double> per_call;
  for (int r = 0; r < rounds; ++r) {
    comm.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) run();
    per_call.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters);
  }
  std::sort(per_call.begin(), per_call.end());
  // Every rank reports the slowest rank's median, as the job waits for it.
  std::vector<float> worst = {static_cast<float>(per_call[per_call.size() / 2])};
  std::vector<float> all(static_cast<std::size_t>(comm.size()));
  comm.all_gather(worst, all);
  return *std::max_element(all.begin(), all.end());
}

}  // namespace

std::vector<FlagSpec> bench_comm_flags() {
  return {{"ranks", "ranks (threads in this process, or the mpirun job's size)", true, "2"},
          {"comm", "threads, mpi or auto", true, "auto"},
          {"sizes", "all-reduce sizes in bytes, comma-separated (1MiB, 64MB, 4096)", true, "64KiB,1MiB,4MiB,16MiB,64MiB"},
          {"iters", "calls per round (5 rounds per size, the median round counts)", true, "10"},
          {"determinism", "deterministic, fast or both", true, "both"}};
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
  planned_world(flags, false);
  return run_ranks(flags, [&](Communicator& comm, Ledger&) {
    const std::vector<RankPlace> places = gather_places(comm);
    if (comm.rank() == 0) {
      std::printf("zero bench comm: all_reduce of f32 on %d ranks (%s), %d calls a round, median of 5 rounds\n%s", comm.size(),
                  comm.backend().c_str(), iters, describe_layout(places, comm.backend()).c_str());
      std::printf("%12s %14s %12s %12s %12s\n", "bytes", "determinism", "time us", "algbw GB/s", "busbw GB/s");
    }
    for (std::uint64_t bytes : sizes) {
      std::vector<float> data(bytes / 4);
      for (Determinism d : runs) {
        comm.set_determinism(d);
        const double t = time_all_reduce(comm, data, iters, 5);
        const double algbw = static_cast<double>(bytes) / t / 1e9;
        const double busbw = algbw * 2.0 * (comm.size() - 1) / comm.size();
        if (comm.rank() == 0) {
          std::printf("%12llu %14s %12.1f %12.3f %12.3f\n", static_cast<unsigned long long>(bytes), determinism_name(d), t * 1e6, algbw, busbw);
          std::fflush(stdout);
        }
      }
    }
    return 0;
  });
}

}  // namespace zero::cli
