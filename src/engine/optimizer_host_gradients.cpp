#include "engine/optimizer_host_gradients.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace zero {

HostGradientOptimizer::HostGradientOptimizer(const OptimizerContext& ctx, int buffers)
    : ctx_(ctx), dev_(ctx.device), grad_buffers_(buffers) {}

HostGradientOptimizer::~HostGradientOptimizer() {
  quiet_sync(dev_.copies());
  quiet_sync(dev_.host());
}

void HostGradientOptimizer::quiet_sync(Stream& s) {
  try {
    s.synchronize();
  } catch (...) {
  }
}

void HostGradientOptimizer::begin_micro_batch(bool first, bool boundary) {
  retire();
  if (first) landed_.assign(ctx_.layout.num_units(), false);
  micro_batches_ = first ? 1 : micro_batches_ + 1;
  boundary_ = boundary;
}

DeviceSpan HostGradientOptimizer::reduce_target(int u) {
  retire();  // one reduction in flight: its slice is freed once landed
  Pending& p = pending_.emplace_back();
  p.slice = dev_.alloc(Tier::kDevice, Category::kCommBuffers, ctx_.parts.at(u).params.size(), "reduced gradient slice", ctx_.dtype);
  return p.slice.span();
}

void HostGradientOptimizer::reduced(int u, const DeviceSpan& region, const Handle& done) {
  const OptimizerPart& part = ctx_.parts.at(u);
  if (pending_.empty() || !pending_.back().slice.span().same_as(region)) pending_.emplace_back();
  Pending& p = pending_.back();
  Stream& copies = dev_.copies();
  const DeviceSpan g = grad(current_, part);
  copies.wait(done);  // a failed reduction fails the stream: no Adam on a partial gradient
  if (!landed_[u]) {  // the unit's first reduction this step replaces what the last step left
    dev_.copy(copies, g, region);
    landed_[u] = true;
  } else {  // later micro-batches add, in micro-batch order, through one host staging slice
    if (staging_.empty()) staging_ = dev_.alloc(Tier::kHost, Category::kCommBuffers, largest_part(), "reduced gradient slice on the host", ctx_.dtype);
    const DeviceSpan staged = staging_.sub(0, region.size());
    dev_.copy(copies, staged, region);
    dev_.add(copies, g, staged);
  }
  const float divisor = gradient_divisor(ctx_.layout.world_size(), micro_batches_, ctx_.predivide);
  if (boundary_ && divisor != 1.0f) dev_.divide(copies, g, divisor);
  p.landed = copies.record();
  if (boundary_) gradient_landed(part, p.landed);
}

void HostGradientOptimizer::finish() {
  retire();
  dev_.copies().synchronize();
}

double HostGradientOptimizer::sum_squares() {
  double acc = 0.0;
  for (const OptimizerPart& p : ctx_.parts) acc = dev_.sum_squares(dev_.compute(), grad(current_, p).sub(p.norm_begin, p.norm_numel), acc);
  return acc;
}

void HostGradientOptimizer::scale(float c) { dev_.scale(dev_.compute(), grads_[current_].span(), c); }

bool HostGradientOptimizer::nonfinite() {
  bool any = false;
  for (const OptimizerPart& p : ctx_.parts) any = dev_.nonfinite(dev_.compute(), grad(current_, p).sub(p.norm_begin, p.norm_numel)) || any;
  return any;
}

std::size_t HostGradientOptimizer::largest_part() const {
  std::size_t n = 0;
  for (const OptimizerPart& p : ctx_.parts) n = std::max(n, p.params.size());
  return n;
}

DeviceBuffer HostGradientOptimizer::host_buffer(Category c, std::size_t n, const std::string& what, Dtype dtype) {
  DeviceBuffer b = dev_.alloc(Tier::kHost, c, n, what, dtype);
  if (ctx_.offload.pin_memory && !dev_.pin(b) && !pin_warned_) {
    std::fprintf(stderr, "zero: [offload] pin_memory: cannot page-lock %s of host memory (%s); using pageable memory\n",
                 format_bytes(n * dtype_bytes(dtype)).c_str(), std::strerror(errno));
    pin_warned_ = true;
  }
  return b;
}

void HostGradientOptimizer::retire() {
  while (!pending_.empty()) {
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    p.landed.wait();  // rethrows a failed reduction or copy
  }
}

}  // namespace zero
