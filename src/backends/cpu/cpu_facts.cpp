// The cpu backend's facts, and those of its test twin, strict (cpu_backend.cpp registers both).
#include "backends/facts.h"

namespace zero {

BackendFacts cpu_facts() {
  BackendFacts f;
  f.name = "cpu";
  f.summary = "host memory and the CPU";
  f.attention_scores = false;  // gpt_kernels.cpp: each block of scores is softmaxed in place in att
  return f;
}

// Tests only: device memory the host cannot dereference, so a read that bypasses the device faults.
BackendFacts strict_facts() {
  BackendFacts f = cpu_facts();
  f.name = "strict";
  f.summary = "tests: device-tier addresses the host cannot dereference";
  f.for_users = false;
  f.role = "tests";
  return f;
}

}  // namespace zero
