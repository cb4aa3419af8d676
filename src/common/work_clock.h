// The work clock: where one thread's time goes, by kind of work, for `zero bench train`'s
// breakdown of a step (matrix products, the other kernels, the optimizer, waiting).
//
// It is per thread and off by default: a rank's compute thread turns it on (set_work_clock) and
// reads its totals before and after a phase (work_seconds). Spans do not nest: inside one span a
// second one records nothing, so the totals never count a moment twice. Off, a span costs one
// thread-local read.
#pragma once

#include <array>
#include <chrono>

namespace zero {

enum class Work : int {
  kMatmul = 0,  // matrix products (BLAS): the models' linear layers, forward and backward
  kAttention,   // attention's scores, causal softmax and weighted sum (and the LLaMA's rotary embedding)
  kNorm,        // LayerNorm, RMSNorm
  kPointwise,   // GELU, SwiGLU, residual additions (and, on the cpu table, the linear layers' biases)
  kLoss,        // the head's softmax and cross-entropy
  kEmbedding,   // token and position embeddings
  kOptimizer,   // Adam / Lamb over the shard
  kWait,        // blocked on a Handle: a collective or a device stream not yet done
  kCopy,        // the device's copies, casts and element-wise adds, fills and scales between the kernels
  kAllocate,    // the device's allocations: the system's, and zeroing (first touch faults each page in)
};
inline constexpr int kNumWork = 10;
const char* work_name(Work w);  // "matmul", "attention", ...

struct WorkSeconds {
  std::array<double, kNumWork> seconds{};
  double operator[](Work w) const { return seconds[static_cast<int>(w)]; }
  WorkSeconds operator-(const WorkSeconds& earlier) const;
};

void set_work_clock(bool on);  // this thread's clock
bool work_clock_on();
WorkSeconds work_seconds();  // this thread's totals since it started

// Adds the time from construction to destruction to `w` on this thread's clock, if it is on and
// no other span of this thread is open.
class WorkSpan {
 public:
  explicit WorkSpan(Work w);
  ~WorkSpan();
  WorkSpan(const WorkSpan&) = delete;
  WorkSpan& operator=(const WorkSpan&) = delete;

 private:
  Work w_;
  bool recording_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace zero
