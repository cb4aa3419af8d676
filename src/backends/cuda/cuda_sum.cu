// sum_squares on the GPU with the CPU loop's bits (the algorithm and why it is exact: exact_sum.h).
//
// Four launches over runs of kRun elements: (1) each run's sum of squares in any order, for the
// prediction only; (2) one thread: the predicted start of every run, acc plus the earlier runs'
// sums, and its binade; (3) each run's effect on the running sum in that binade, per thread over
// 32 consecutive elements, combined in order through shared memory (integers: exact); (4) one
// thread applies the effects in run order, adding a run term by term where its check fails.
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_half.cuh"
#include "backends/cuda/cuda_ops.h"
#include "device/exact_sum.h"

namespace zero::cuda_ops {
namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 32;
constexpr std::size_t kRun = kThreads * kPerThread;  // 8192 elements per run

__device__ double square(const void* x, std::size_t i, Dtype d) {
  const double v = cuda_half::load(x, i, d);
  return __dmul_rn(v, v);  // exact
}

// (1) Any-order sums of each run (they only pick a binade).
__global__ void run_sums_kernel(const void* x, std::size_t n, Dtype d, double* sums) {
  __shared__ double part[kThreads];
  const std::size_t base = blockIdx.x * kRun;
  double s = 0.0;
  for (std::size_t i = base + threadIdx.x; i < base + kRun && i < n; i += kThreads) s += square(x, i, d);
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = part[0];
}

// (2) The binade each run is predicted to start in.
__global__ void predict_kernel(const double* sums, std::size_t runs, double acc, int* binades) {
  double start = acc;
  for (std::size_t r = 0; r < runs; ++r) {
    binades[r] = exact_sum::binade_of(start);
    start += sums[r];
  }
}

// (3) Each run's effect in its predicted binade.
__global__ void effects_kernel(const void* x, std::size_t n, Dtype d, const int* binades, exact_sum::Effect* effects) {
  __shared__ exact_sum::Effect part[kThreads];
  const int e = binades[blockIdx.x];
  exact_sum::Effect mine = exact_sum::identity();
  if (e == exact_sum::kNoBinade) {
    mine.inc[0] = mine.inc[1] = exact_sum::kCap;
  } else {
    const std::size_t first = blockIdx.x * kRun + threadIdx.x * std::size_t{kPerThread};
    for (std::size_t i = first; i < first + kPerThread && i < n; ++i) mine = exact_sum::then(mine, exact_sum::term(square(x, i, d), e));
  }
  part[threadIdx.x] = mine;
  __syncthreads();
  for (int w = 1; w < kThreads; w *= 2) {  // part[t] = part[t] then part[t + w], t a multiple of 2w: in order
    if (threadIdx.x % (2 * w) == 0) part[threadIdx.x] = exact_sum::then(part[threadIdx.x], part[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) effects[blockIdx.x] = part[0];
}

// (4) The effects in order; a run whose check fails is added term by term.
__global__ void apply_kernel(const void* x, std::size_t n, Dtype d, std::size_t runs, const int* binades,
                             const exact_sum::Effect* effects, double acc, double* out) {
  double a = acc;
  for (std::size_t r = 0; r < runs; ++r) {
    if (exact_sum::apply(&a, binades[r], effects[r])) continue;
    for (std::size_t i = r * kRun; i < (r + 1) * kRun && i < n; ++i) a = __dadd_rn(a, square(x, i, d));
  }
  *out = a;
}

}  // namespace

double sum_squares(const void* x, std::size_t n, Dtype d, double acc, cudaStream_t s) {
  if (n == 0) return acc;
  const std::size_t runs = (n + kRun - 1) / kRun;
  void* scratch = nullptr;
  const std::size_t bytes = runs * (sizeof(double) + sizeof(int) + sizeof(exact_sum::Effect)) + sizeof(double) + 64;
  cuda_check(cudaMallocAsync(&scratch, bytes, s), "sum_squares scratch");
  auto* effects = static_cast<exact_sum::Effect*>(scratch);
  auto* sums = reinterpret_cast<double*>(effects + runs);
  double* out = sums + runs;
  auto* binades = reinterpret_cast<int*>(out + 1);
  const auto grid = static_cast<unsigned>(runs);
  run_sums_kernel<<<grid, kThreads, 0, s>>>(x, n, d, sums);
  cuda_check_launch("sum_squares (run sums)");
  predict_kernel<<<1, 1, 0, s>>>(sums, runs, acc, binades);
  cuda_check_launch("sum_squares (prediction)");
  effects_kernel<<<grid, kThreads, 0, s>>>(x, n, d, binades, effects);
  cuda_check_launch("sum_squares (effects)");
  apply_kernel<<<1, 1, 0, s>>>(x, n, d, runs, binades, effects, acc, out);
  cuda_check_launch("sum_squares (apply)");
  double result = 0.0;
  cuda_check(cudaMemcpyAsync(&result, out, sizeof(double), cudaMemcpyDeviceToHost, s), "sum_squares result");
  cuda_check(cudaFreeAsync(scratch, s), "sum_squares scratch");
  cuda_check(cudaStreamSynchronize(s), "sum_squares");
  return result;
}

}  // namespace zero::cuda_ops
