// The cpu backend and its test twin, strict (cpu_device.cpp), both with the GPT's cpu kernel table
// (cpu_gpt_kernels.cpp): the device tier is host RAM, so the host-memory check counts it.
#include "backends/registry.h"

namespace zero {

BackendFacts cpu_facts();     // cpu_facts.cpp
BackendFacts strict_facts();  // cpu_facts.cpp
std::unique_ptr<Device> make_cpu_device(Ledger& ledger);     // cpu_device.cpp
std::unique_ptr<Device> make_strict_device(Ledger& ledger);  // cpu_device.cpp
std::unique_ptr<GptKernels> make_cpu_gpt_kernels(const GptCompute& compute);  // cpu_gpt_kernels.cpp
std::unique_ptr<LlamaKernels> make_cpu_llama_kernels(const GptCompute& compute);  // cpu_llama_kernels.cpp
std::string describe_cpu_matmul(Dtype operands);  // matmul.cpp

namespace {
bool always(std::string*) { return true; }
}  // namespace

Backend cpu_backend() {
  Backend b;
  b.facts = cpu_facts();
  b.make_device = make_cpu_device;
  b.make_gpt_kernels = make_cpu_gpt_kernels;
  b.make_llama_kernels = make_cpu_llama_kernels;
  b.describe_matmul = describe_cpu_matmul;
  b.available = always;
  return b;
}

Backend strict_backend() {
  Backend b = cpu_backend();
  b.facts = strict_facts();
  b.make_device = make_strict_device;
  return b;
}

}  // namespace zero
