// A timeline of what each rank's threads did, for `--trace FILE` (Chrome's trace format, opened
// by Perfetto or chrome://tracing) and for the overlap figures printed after a run.
//
// A lane is one kind of work of a rank: compute (forward and backward of units), communication
// (collectives, on the comm thread), copies (host<->device), the CPU optimizer.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace zero {

enum class Lane : int { kCompute = 0, kComm = 1, kCopy = 2, kOptimizer = 3 };
inline constexpr int kNumLanes = 4;
const char* lane_name(Lane lane);

// One span, plain data so ranks can gather them as bytes.
struct TraceEvent {
  std::int32_t rank = 0;
  std::int32_t lane = 0;
  double start_us = 0;  // since the tracer's epoch (shared by all ranks of a process; under MPI
  double dur_us = 0;    // each process has its own, so lanes align only within a rank)
  char name[48] = {};
};

class Tracer {
 public:
  // Keeps the most recent `max_events` spans (a ring), so a long run's timeline stays bounded.
  explicit Tracer(int rank, std::size_t max_events = 200000);
  void record(Lane lane, const std::string& name, std::chrono::steady_clock::time_point start,
              std::chrono::steady_clock::time_point end);
  std::vector<TraceEvent> events() const;
  int rank() const { return rank_; }

 private:
  int rank_;
  std::size_t max_events_;
  std::uint64_t recorded_ = 0;
  mutable std::mutex mu_;
  std::vector<TraceEvent> events_;  // a ring once full: the oldest is overwritten
};

// Records a span from construction to destruction; does nothing without a tracer.
class TraceSpan {
 public:
  TraceSpan(Tracer* tracer, Lane lane, std::string name);
  ~TraceSpan();
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  Tracer* tracer_;
  Lane lane_;
  std::string name_;
  std::chrono::steady_clock::time_point start_;
};

// The Chrome trace JSON of these events: one process per rank, one thread per lane.
std::string chrome_trace_json(const std::vector<TraceEvent>& events);

// Of the time rank `rank` spent in lane `a`, the fraction during which lane `b` was also busy.
// Returns -1 if lane `a` recorded nothing.
double overlap_fraction(const std::vector<TraceEvent>& events, int rank, Lane a, Lane b);

}  // namespace zero
