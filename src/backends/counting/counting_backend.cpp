// The counting backend: the planner's dry run (counting_device.cpp). Bytes are counted in the
// ledger and nothing is held or computed; the GPT's table is the cpu backend's (its models are
// built, not run).
#include "backends/registry.h"

namespace zero {

BackendFacts counting_facts();                                 // counting_facts.cpp
std::unique_ptr<Device> make_counting_device(Ledger& ledger);  // counting_device.cpp
Backend cpu_backend();                                         // backends/cpu/cpu_backend.cpp

Backend counting_backend() {
  Backend b = cpu_backend();
  b.facts = counting_facts();
  b.make_device = make_counting_device;
  return b;
}

}  // namespace zero
