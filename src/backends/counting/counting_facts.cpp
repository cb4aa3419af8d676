// The counting backend's facts: the planner's dry-run device (counting_backend.cpp registers it).
#include "backends/facts.h"

namespace zero {

BackendFacts counting_facts() {
  BackendFacts f;
  f.name = "counting";
  f.summary = "the planner: bytes counted, nothing held or computed";
  f.for_users = false;
  f.role = "the planner";
  f.attention_scores = false;  // its models compute with the cpu table (registry.cpp)
  return f;
}

}  // namespace zero
