#include "cuda/toy_module.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace zero::testing {
namespace {

void check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw std::runtime_error(std::string("toy module: ") + what + ": " + cudaGetErrorString(rc));
}

__global__ void grad_kernel(const float* w, const float* t, float* g, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i < n) g[i] = __fadd_rn(g[i], __fsub_rn(w[i], t[i]));
}

}  // namespace

ToyModule::ToyModule(bool gpu, int rank, std::vector<std::size_t> sizes) : gpu_(gpu), sizes_(std::move(sizes)) {
  for (std::size_t u = 0; u < sizes_.size(); ++u) {
    std::vector<float> t(sizes_[u]);
    for (std::size_t i = 0; i < t.size(); ++i) t[i] = 0.5f * std::sin(0.37f * static_cast<float>(i + 13 * u) + static_cast<float>(rank));
    if (gpu_) {
      float* d = nullptr;
      check(cudaMalloc(&d, t.size() * sizeof(float)), "cudaMalloc");
      check(cudaMemcpy(d, t.data(), t.size() * sizeof(float), cudaMemcpyHostToDevice), "targets");
      device_targets_.push_back(d);
    }
    targets_.push_back(std::move(t));
  }
}

ToyModule::~ToyModule() {
  for (float* d : device_targets_) cudaFree(d);
}

std::vector<UnitSpec> ToyModule::units() const {
  std::vector<UnitSpec> out;
  for (std::size_t u = 0; u < sizes_.size(); ++u) {
    UnitSpec s;
    s.name = "toy." + std::to_string(u);
    s.params = {ParamSpec{"toy." + std::to_string(u) + ".w", {static_cast<std::int64_t>(sizes_[u])}, Init::normal(0.5f), u % 2 == 0}};
    out.push_back(s);
  }
  return out;
}

void ToyModule::forward(int unit, const UnitViews& views) {
  const std::size_t n = sizes_[unit];
  std::vector<float> w(n);
  if (gpu_) {
    check(cudaMemcpy(w.data(), views.param(unit, 0), n * sizeof(float), cudaMemcpyDeviceToHost), "reading w");
  } else {
    w.assign(views.param(unit, 0), views.param(unit, 0) + n);
  }
  if (unit == 0) sum_ = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(w[i]) - targets_[unit][i];
    sum_ += 0.5 * d * d;
  }
  if (unit + 1 == static_cast<int>(sizes_.size())) loss_ = static_cast<float>(sum_);
}

void ToyModule::backward(int unit, const UnitViews& views) {
  const std::size_t n = sizes_[unit];
  const float* w = views.param(unit, 0);
  float* g = views.grad(unit, 0);
  if (gpu_) {
    grad_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(w, device_targets_[unit], g, n);
    check(cudaGetLastError(), "grad kernel");
  } else {
    for (std::size_t i = 0; i < n; ++i) g[i] = g[i] + (w[i] - targets_[unit][i]);
  }
}

}  // namespace zero::testing
