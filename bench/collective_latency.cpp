// Latency of one all_reduce in each determinism mode (bench/README.md, "Determinism"), on the
// mpi backend: the order check's extra all-gather and the rank-order path against MPI_Allreduce.
// Not part of the build; against a build/ tree (CUDA build: add -lcudart -lcublas -lnccl):
//   g++ -std=c++20 -O2 -Isrc bench/collective_latency.cpp build/src/libzero.a $(mpicxx --showme:link) \
//       -lopenblas -fopenmp -lssl -lcrypto -lz -o build/collective_latency
//   mpirun -np 4 build/collective_latency
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include "comm/communicator.h"
using namespace zero;
int main() {
  auto comm = make_communicator("mpi");
  const int n = comm->size();
  for (std::size_t k : {256, 1 << 20}) {  // floats per rank: 1 KiB, 4 MiB
    const int reps = k < 1000 ? 400 : 20;
    std::vector<float> data(n * k, 1.0f);
    for (Determinism d : {Determinism::kDeterministic, Determinism::kFast, Determinism::kDeterministic, Determinism::kFast}) {
      comm->set_determinism(d);
      comm->barrier();
      std::vector<double> t;
      for (int i = 0; i < reps; ++i) {
        auto a = std::chrono::steady_clock::now();
        comm->all_reduce(data);
        t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
      }
      std::sort(t.begin(), t.end());
      if (comm->rank() == 0) std::printf("np %d all_reduce of %zu KiB per rank, %-13s: median %.0f us, best %.0f us\n", n, k * 4 / 1024, determinism_name(d), t[t.size() / 2], t[0]);
    }
  }
}
