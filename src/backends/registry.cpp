#include "backends/registry.h"

#include "common/error.h"

namespace zero {

// Each backend folder's registration (backends/<name>/*_backend.cpp).
Backend cpu_backend();
Backend strict_backend();
Backend counting_backend();
Backend cuda_backend();

// In backend_facts()'s order.
const std::vector<Backend>& backends() {
  static const std::vector<Backend> all{cpu_backend(), cuda_backend(), strict_backend(), counting_backend()};
  return all;
}

const Backend& find_backend(const std::string& name, const std::string& component) {
  const BackendFacts& f = find_facts(name, component);  // the error for a name that is none
  for (const Backend& b : backends()) {
    if (b.facts.name == f.name) return b;
  }
  ZERO_CHECK(false, "backend ", name, " has facts but no registration");
  return backends().front();
}

void require_backend_available(const std::string& name, const std::string& what) {
  const Backend& b = find_backend(name, what.substr(0, what.find(' ')));
  std::string why;
  if (!b.available(&why)) {
    throw ConfigError(cat(what, " ", name, ": ", b.facts.missing, " (", why, "): run on a machine with ", b.facts.needs,
                          ", or use --device ", default_device()));
  }
}

std::unique_ptr<Device> make_device(const std::string& name, Ledger& ledger) {
  return find_backend(name).make_device(ledger);
}

// Tables without bf16 weights (takes_bf16_weights false) are never given them (gpt.cpp asks first).
void GptKernels::matmul_forward_bf16(float*, const float*, const std::uint16_t*, const float*, int, int, int) {
  ZERO_CHECK(false, name(), "'s kernels given bf16 weights");
}
void GptKernels::matmul_backward_bf16(float*, float*, float*, const float*, const float*, const std::uint16_t*, int, int, int) {
  ZERO_CHECK(false, name(), "'s kernels given bf16 weights");
}

void GptKernels::product_forward(float* out, const float* inp, GptWeight w, const float* bias, int N, int C, int OC) {
  if (w.bf16 != nullptr) return matmul_forward_bf16(out, inp, w.bf16, bias, N, C, OC);
  matmul_forward(out, inp, w.f32, bias, N, C, OC);
}
void GptKernels::product_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, GptWeight w, int N,
                                 int C, int OC) {
  if (w.bf16 != nullptr) return matmul_backward_bf16(dinp, dw, dbias, dout, inp, w.bf16, N, C, OC);
  matmul_backward(dinp, dw, dbias, dout, inp, w.f32, N, C, OC);
}

// The fused calls' defaults: the separate kernels, in the order gpt.cpp called them before.
void GptKernels::matmul_gelu_forward(float* out, float* act, const float* inp, GptWeight w, const float* bias, int N, int C,
                                     int OC) {
  product_forward(out, inp, w, bias, N, C, OC);
  gelu_forward(act, out, static_cast<std::int64_t>(N) * OC);
}
void GptKernels::matmul_residual_forward(float* res_out, float* out, const float* res_in, const float* inp, GptWeight w,
                                         const float* bias, int N, int C, int OC) {
  product_forward(out, inp, w, bias, N, C, OC);
  residual_forward(res_out, res_in, out, static_cast<std::int64_t>(N) * OC);
}
void GptKernels::gelu_matmul_backward(float* dinp, float* dw, float* dbias, float* dpre, const float* pre, const float* dact,
                                      const float* inp, GptWeight w, int N, int C, int OC) {
  gelu_backward(dpre, pre, dact, static_cast<std::int64_t>(N) * OC);
  product_backward(dinp, dw, dbias, dpre, inp, w, N, C, OC);
}

std::unique_ptr<GptKernels> make_gpt_kernels(const GptCompute& compute) {
  return find_backend(compute.device, "[model]").make_gpt_kernels(compute);
}

void require_llama_kernels(const std::string& device, const std::string& what) {
  if (find_backend(device, "[model]").make_llama_kernels != nullptr) return;
  std::string have;
  for (const Backend& b : backends()) {
    if (b.make_llama_kernels != nullptr) have += (have.empty() ? "" : ", ") + b.facts.name;
  }
  throw ConfigError(cat(what, ": device ", device, " has no LLaMA kernels yet; the devices that have them: ", have,
                        " (--device or \"device\")"));
}

std::unique_ptr<LlamaKernels> make_llama_kernels(const GptCompute& compute) {
  require_llama_kernels(compute.device, "[model] a LLaMA");
  return find_backend(compute.device, "[model]").make_llama_kernels(compute);
}

const Backend* backend_of_communicator(const std::string& comm) {
  for (const Backend& b : backends()) {
    if (!b.communicator.empty() && b.communicator == comm) return &b;
  }
  return nullptr;
}

std::string device_communicator_names() {
  std::string out;
  for (const Backend& b : backends()) {
    if (!b.communicator.empty()) out += (out.empty() ? "" : ", ") + b.communicator;
  }
  return out;
}

std::unique_ptr<Communicator> make_named_communicator(const std::string& name, CommOptions options) {
  if (const Backend* b = backend_of_communicator(name)) return b->make_communicator(options);
  return make_communicator(name, options);
}

}  // namespace zero
