#include "common/trace.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

namespace zero {
namespace {

// One epoch per process, so the lanes of thread ranks line up.
const std::chrono::steady_clock::time_point kEpoch = std::chrono::steady_clock::now();

double since_epoch_us(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t - kEpoch).count();
}

// The union of a lane's spans as sorted, disjoint [start, end) intervals.
std::vector<std::pair<double, double>> busy(const std::vector<TraceEvent>& events, int rank, Lane lane) {
  std::vector<std::pair<double, double>> spans;
  for (const TraceEvent& e : events)
    if (e.rank == rank && e.lane == static_cast<int>(lane)) spans.emplace_back(e.start_us, e.start_us + e.dur_us);
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second) merged.back().second = std::max(merged.back().second, s.second);
    else merged.push_back(s);
  }
  return merged;
}

}  // namespace

const char* lane_name(Lane lane) {
  switch (lane) {
    case Lane::kCompute: return "compute";
    case Lane::kComm: return "communication";
    case Lane::kCopy: return "copies";
    case Lane::kOptimizer: return "cpu optimizer";
  }
  return "?";
}

Tracer::Tracer(int rank, std::size_t max_events) : rank_(rank), max_events_(max_events == 0 ? 1 : max_events) {}

void Tracer::record(Lane lane, const std::string& name, std::chrono::steady_clock::time_point start,
                    std::chrono::steady_clock::time_point end) {
  TraceEvent e;
  e.rank = rank_;
  e.lane = static_cast<int>(lane);
  e.start_us = since_epoch_us(start);
  e.dur_us = std::chrono::duration<double, std::micro>(end - start).count();
  std::strncpy(e.name, name.c_str(), sizeof e.name - 1);
  std::lock_guard lock(mu_);
  if (events_.size() < max_events_) events_.push_back(e);
  else events_[recorded_ % max_events_] = e;
  ++recorded_;
}

std::vector<TraceEvent> Tracer::events() const {
  std::lock_guard lock(mu_);
  return events_;
}

TraceSpan::TraceSpan(Tracer* tracer, Lane lane, std::string name)
    : tracer_(tracer), lane_(lane), name_(std::move(name)), start_(std::chrono::steady_clock::now()) {}

TraceSpan::~TraceSpan() {
  if (tracer_) tracer_->record(lane_, name_, start_, std::chrono::steady_clock::now());
}

std::string chrome_trace_json(const std::vector<TraceEvent>& events) {
  nlohmann::json out = nlohmann::json::array();
  std::vector<int> ranks;
  for (const TraceEvent& e : events) ranks.push_back(e.rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  for (int r : ranks) {
    out.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r}, {"args", {{"name", "rank " + std::to_string(r)}}}});
    for (int l = 0; l < kNumLanes; ++l) {
      out.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", l}, {"args", {{"name", lane_name(static_cast<Lane>(l))}}}});
    }
  }
  for (const TraceEvent& e : events) {
    out.push_back({{"name", std::string(e.name)}, {"ph", "X"}, {"pid", e.rank}, {"tid", e.lane}, {"ts", e.start_us}, {"dur", e.dur_us},
                   {"cat", lane_name(static_cast<Lane>(e.lane))}});
  }
  return nlohmann::json{{"traceEvents", out}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

double overlap_fraction(const std::vector<TraceEvent>& events, int rank, Lane a, Lane b) {
  const auto sa = busy(events, rank, a), sb = busy(events, rank, b);
  double total = 0, shared = 0;
  std::size_t j = 0;
  for (const auto& [s, e] : sa) {
    total += e - s;
    while (j < sb.size() && sb[j].second <= s) ++j;
    for (std::size_t k = j; k < sb.size() && sb[k].first < e; ++k) shared += std::min(e, sb[k].second) - std::max(s, sb[k].first);
  }
  return total > 0 ? shared / total : -1.0;
}

}  // namespace zero
