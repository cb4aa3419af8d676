// The reference for `zero bench comm`: the same loop over MPI_Allreduce alone (f32 sum, in place),
// as the OSU micro-benchmarks time it, with nothing of zero's in between. Per size: 2 warm-up calls,
// 5 rounds of ITERS calls between barriers, the median round's time per call, the slowest rank's;
// every call's result checked. Prints the rows zero bench comm prints (bench/comm_link.sh).
//   mpirun -np 2 build/tests/allreduce_reference [ITERS] [BYTES...]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iters = argc > 1 ? std::atoi(argv[1]) : 10;
  std::vector<long long> sizes;
  for (int a = 2; a < argc; ++a) sizes.push_back(std::atoll(argv[a]));
  if (sizes.empty()) sizes = {64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  const float mine = static_cast<float>(rank + 1), want = static_cast<float>(size * (size + 1) / 2);
  for (long long bytes : sizes) {
    std::vector<float> data(static_cast<std::size_t>(bytes / 4));
    auto run = [&] {
      std::fill(data.begin(), data.end(), mine);
      MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (data.front() != want || data.back() != want) {
        std::fprintf(stderr, "allreduce_reference: wrong sum %g (want %g)\n", data.front(), want);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    };
    run();
    run();
    std::vector<double> per_call;
    for (int r = 0; r < 5; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < iters; ++i) run();
      per_call.push_back((MPI_Wtime() - t0) / iters);
    }
    std::sort(per_call.begin(), per_call.end());
    double median = per_call[per_call.size() / 2], worst = 0;
    MPI_Allreduce(&median, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const double algbw = static_cast<double>(bytes) / worst / 1e9;
    if (rank == 0) std::printf("%12lld %14s %12.1f %12.3f %12.3f\n", bytes, "MPI_Allreduce", worst * 1e6, algbw, algbw * 2.0 * (size - 1) / size);
  }
  MPI_Finalize();
  return 0;
}
