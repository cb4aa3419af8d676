// The backends, by name. Each backend folder (cpu/, cuda/, counting/) holds its device, its
// kernels, its device-memory communicator where it has one, and its facts (facts.h), and gives
// this registry one Backend (registry.cpp lists them). Nothing outside a backend folder and this
// registry names a backend: code that chooses one asks here, by the name a config or flag gave.
//
// An operation a backend's device lacks is not a branch on its name either: Device::supports
// says which, and the device layer runs it through its one host-staged fallback
// (device/host_fallback.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/facts.h"
#include "backends/gpt_kernel_table.h"
#include "backends/llama_kernel_table.h"
#include "comm/communicator.h"
#include "zero/comm_factory.h"
#include "device/device.h"

namespace zero {

struct Backend {
  BackendFacts facts;
  std::unique_ptr<Device> (*make_device)(Ledger&) = nullptr;
  std::unique_ptr<GptKernels> (*make_gpt_kernels)(const GptCompute&) = nullptr;
  // The LLaMA's own kernels (llama_kernel_table.h); null where the backend has none yet.
  std::unique_ptr<LlamaKernels> (*make_llama_kernels)(const GptCompute&) = nullptr;
  // The backend's own device-memory communicator (--comm NAME), if any: one rank per process,
  // launched and bootstrapped as the mpi backend's.
  std::string communicator;
  std::unique_ptr<Communicator> (*make_communicator)(CommOptions) = nullptr;
  // How the GPT table computes matrix products whose operands are `operands` (GptCompute::matmul),
  // for the runs' first lines: "bf16 matrix products (oneDNN, AVX512-BF16)".
  std::string (*describe_matmul)(Dtype operands) = nullptr;
  // True if this build and this process can run the backend; else false with the reason.
  bool (*available)(std::string* why) = nullptr;
};

// Every backend, in the order of backend_facts().
const std::vector<Backend>& backends();
// The backend called `name`; ConfigError starting with `component`, listing the names, otherwise.
const Backend& find_backend(const std::string& name, const std::string& component = "[device]");
// ConfigError unless backend `name` can run here, before any work starts: "`what` NAME: no CUDA
// device (why): run on a machine with a GPU, or use --device cpu" (`what`: "[train] device").
void require_backend_available(const std::string& name, const std::string& what);

// The one device factory, over this rank's ledger.
std::unique_ptr<Device> make_device(const std::string& name, Ledger& ledger);

// The backend whose device communicator is called `comm`, or nullptr (zero's own: self, threads, mpi).
const Backend* backend_of_communicator(const std::string& comm);
// make_named_communicator and device_communicator_names: the public zero/comm_factory.h.

}  // namespace zero
