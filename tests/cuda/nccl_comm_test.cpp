// The nccl backend against the mpi backend in the same mpirun job: reduce_scatter, all_gather,
// all_reduce and broadcast on GPU memory give the mpi backend's bits on host memory, for f32 and
// 16-bit elements, in one piece and in many (the segmented packing on GPU scratch), and
// all_gather_bytes on host memory (staged). One GPU holds one NCCL rank: on one GPU this runs
// as -np 1; with G GPUs, -np G checks the rank-order sum across ranks too.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstring>
#include <random>
#include <vector>

#include "backends/registry.h"
#include "comm/communicator.h"

namespace zero {
namespace {

struct GpuBytes {
  void* p = nullptr;
  explicit GpuBytes(const std::vector<unsigned char>& host) {
    EXPECT_EQ(cudaMalloc(&p, host.size() + 1), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~GpuBytes() { cudaFree(p); }
  std::vector<unsigned char> get(std::size_t n) const {
    std::vector<unsigned char> out(n);
    EXPECT_EQ(cudaMemcpy(out.data(), p, n, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

std::vector<unsigned char> random_elements(std::size_t n, Dtype d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> z(0.0f, 3.0f);
  std::vector<float> f(n);
  for (auto& x : f) x = z(rng);
  std::vector<unsigned char> out(n * dtype_bytes(d));
  narrow_from_f32(f.data(), d, out.data(), n);
  return out;
}

TEST(NcclComm, CollectivesGiveTheMpiBackendsBits) {
  auto mpi = make_communicator("mpi");
  auto nccl = make_named_communicator("nccl");
  ASSERT_EQ(nccl->backend(), "nccl");
  const std::size_t n = static_cast<std::size_t>(mpi->size());
  for (Dtype d : {Dtype::kF32, Dtype::kBf16, Dtype::kF16}) {
    for (std::size_t k : {1, 1000, 65537}) {
      for (std::size_t segment : {std::size_t{0}, std::size_t{777}}) {
        const std::size_t eb = dtype_bytes(d);
        const auto send = random_elements(n * k, d, 100 * k + static_cast<std::uint64_t>(mpi->rank()) + segment);
        // reduce_scatter
        std::vector<unsigned char> want(k * eb);
        mpi->reduce_scatter_async(send.data(), want.data(), k, d, segment).wait();
        GpuBytes gs(send), gr(std::vector<unsigned char>(k * eb));
        nccl->reduce_scatter_async(gs.p, gr.p, k, d, segment).wait();
        EXPECT_EQ(gr.get(k * eb), want) << "reduce_scatter " << dtype_label(d) << " k=" << k << " segment=" << segment;
        // all_gather of this rank's slice
        std::vector<unsigned char> gathered(n * k * eb);
        mpi->all_gather_async(want.data(), gathered.data(), k, d, segment).wait();
        GpuBytes gg(std::vector<unsigned char>(n * k * eb));
        nccl->all_gather_async(gr.p, gg.p, k, d, segment).wait();
        EXPECT_EQ(gg.get(n * k * eb), gathered) << "all_gather " << dtype_label(d) << " k=" << k;
        // all_reduce in place
        std::vector<unsigned char> reduced = send;
        mpi->all_reduce_async(reduced.data(), n * k, d, segment).wait();
        GpuBytes ga(send);
        nccl->all_reduce_async(ga.p, n * k, d, segment).wait();
        EXPECT_EQ(ga.get(n * k * eb), reduced) << "all_reduce " << dtype_label(d) << " k=" << k;
      }
    }
  }
  std::vector<float> b(4097, static_cast<float>(nccl->rank() + 1));
  GpuBytes gb(std::vector<unsigned char>(reinterpret_cast<unsigned char*>(b.data()), reinterpret_cast<unsigned char*>(b.data() + b.size())));
  nccl->broadcast_async(std::span<float>(static_cast<float*>(gb.p), b.size()), 0).wait();
  const auto got = gb.get(b.size() * sizeof(float));
  float first = 0;
  std::memcpy(&first, got.data(), sizeof first);
  EXPECT_EQ(first, 1.0f) << "broadcast from rank 0";
  const int mine = 1000 + nccl->rank();
  std::vector<int> all(n);
  nccl->all_gather_bytes(&mine, sizeof mine, all.data());  // host memory: staged through the GPU
  for (std::size_t r = 0; r < n; ++r) EXPECT_EQ(all[r], 1000 + static_cast<int>(r));
  EXPECT_GT(nccl->traffic().calls[static_cast<int>(Collective::kReduceScatter)], 0u);
}

}  // namespace
}  // namespace zero
