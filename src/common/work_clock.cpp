#include "common/work_clock.h"

namespace zero {
namespace {

struct ThreadClock {
  bool on = false;
  bool open = false;  // a span of this thread is recording
  WorkSeconds totals;
};

ThreadClock& clock_of_this_thread() {
  thread_local ThreadClock c;
  return c;
}

}  // namespace

const char* work_name(Work w) {
  switch (w) {
    case Work::kMatmul: return "matmul";
    case Work::kAttention: return "attention";
    case Work::kNorm: return "norm";
    case Work::kPointwise: return "pointwise";
    case Work::kLoss: return "loss";
    case Work::kEmbedding: return "embedding";
    case Work::kOptimizer: return "optimizer";
    case Work::kWait: return "wait";
    case Work::kCopy: return "copy";
    case Work::kAllocate: return "allocate";
  }
  return "?";
}

WorkSeconds WorkSeconds::operator-(const WorkSeconds& earlier) const {
  WorkSeconds d;
  for (int i = 0; i < kNumWork; ++i) d.seconds[i] = seconds[i] - earlier.seconds[i];
  return d;
}

void set_work_clock(bool on) { clock_of_this_thread().on = on; }
bool work_clock_on() { return clock_of_this_thread().on; }
WorkSeconds work_seconds() { return clock_of_this_thread().totals; }

WorkSpan::WorkSpan(Work w) : w_(w), recording_(false) {
  ThreadClock& c = clock_of_this_thread();
  if (!c.on || c.open) return;
  c.open = recording_ = true;
  start_ = std::chrono::steady_clock::now();
}

WorkSpan::~WorkSpan() {
  if (!recording_) return;
  ThreadClock& c = clock_of_this_thread();
  c.totals.seconds[static_cast<int>(w_)] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  c.open = false;
}

}  // namespace zero
