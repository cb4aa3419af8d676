#include "engine/param_gather.h"

#include <future>
#include <memory>

#include "common/error.h"
#include "engine/quantize.h"

namespace zero {
namespace {

// Byte buffers are allocated as f32 words: the ledger counts the bytes rounded up to 4.
std::size_t words(std::size_t bytes) { return (bytes + 3) / 4; }

}  // namespace

bool persists_whole(const StageContext& ctx, int u) {
  return static_cast<std::int64_t>(ctx.layout.unit(u).numel) < ctx.stage3.persistence_threshold;
}

ParameterGather::ParameterGather(const StageContext& ctx)
    : ctx_(ctx), secondary_offset_(ctx.layout.num_units()), pending_(ctx.layout.num_units()), valid_(ctx.layout.num_units()) {
  if (!ctx.secondary) return;
  const std::size_t h = static_cast<std::size_t>(ctx.secondary->size());
  std::size_t total = 0;
  for (int u = 0; u < ctx.layout.num_units(); ++u) {
    secondary_offset_[u] = total;
    if (persists_whole(ctx, u)) continue;
    ZERO_CHECK(ctx.layout.unit(u).padded % h == 0, "unit ", u, " of ", ctx.layout.unit(u).padded, " elements over hpZ groups of ", h);
    total += ctx.layout.unit(u).padded / h;
  }
  secondary_ = ctx.device.alloc(Tier::kDevice, Category::kParameters, total, "secondary parameter partition (hpZ)", ctx.dtype);
}

DeviceSpan ParameterGather::secondary_part(int u) const {
  return secondary_.sub(secondary_offset_[u], ctx_.layout.unit(u).padded / static_cast<std::size_t>(ctx_.secondary->size()));
}

Handle ParameterGather::start(int u, const DeviceSpan& source, const DeviceSpan& whole, bool backward) {
  const std::string& name = ctx_.layout.unit(u).name;
  if (from_secondary(backward)) {
    ZERO_CHECK(valid_[u], "hpZ: the backward of unit '", name, "' before its forward since the last step");
    return ctx_.secondary->all_gather(secondary_part(u), whole, name);
  }
  if (exact_) return ctx_.comm.all_gather(source, whole, name);
  pending_[u] = ctx_.secondary != nullptr && !backward;
  if (ctx_.quantized_weights) return quantized(source, whole, name);
  return ctx_.comm.all_gather(source, whole, name);
}

void ParameterGather::arrived(int u, const DeviceSpan& whole) {
  if (!pending_[u]) return;
  pending_[u] = 0;
  const DeviceSpan part = secondary_part(u);
  ctx_.device.copy(ctx_.device.compute(), part, whole.sub(static_cast<std::size_t>(ctx_.secondary->rank()) * part.size(), part.size()));
  valid_[u] = 1;
}

void ParameterGather::parameters_changed() {
  for (int u = 0; u < ctx_.layout.num_units(); ++u) pending_[u] = valid_[u] = 0;
}

// qwZ: this rank's slice quantised into a packet (int8 values, then one f32 scale a block), the
// packets all-gathered as bytes (so the traffic counts exactly what is sent), and every rank's
// dequantised into `whole` when the gather is first waited for. The two packet buffers
// (comm_buffers) live until then. In the planner's dry run nothing is computed: the same buffers
// are held and the same bytes counted.
Handle ParameterGather::quantized(const DeviceSpan& source, const DeviceSpan& whole, const std::string& unit) {
  Device& dev = ctx_.device;
  Communicator& comm = ctx_.comm.communicator();
  const std::size_t k = source.size(), n = static_cast<std::size_t>(comm.size()), bytes = quantized_bytes(k);
  ZERO_CHECK(whole.size() == n * k, "qwZ gather of ", k, " elements a rank into ", whole.size());
  auto send = std::make_shared<DeviceBuffer>(
      dev.alloc(Tier::kDevice, Category::kCommBuffers, words(bytes), "int8 parameter slice (qwZ)", Dtype::kF32, false));
  auto recv = std::make_shared<DeviceBuffer>(
      dev.alloc(Tier::kDevice, Category::kCommBuffers, words(n * bytes), "int8 parameters gathered (qwZ)", Dtype::kF32, false));
  const CollectiveLabel label("unit " + unit);
  auto* packet = static_cast<std::uint8_t*>(dev.transport(send->span()));
  auto* packets = static_cast<std::uint8_t*>(dev.transport(recv->span()));
  void* out = dev.transport(whole);
  const Dtype dtype = whole.dtype();
  const bool computes = dev.computes();
  if (computes) {
    dev.compute().synchronize();  // the slice is written (the optimizer's update, a staging copy)
    const void* x = dev.transport(source);
    if (source.dtype() == Dtype::kF32) {
      quantize_int8(static_cast<const float*>(x), k, packet);
    } else {  // 16-bit parameters: widened (exactly) one slice at a time
      std::vector<float> wide(k);
      widen_to_f32(x, source.dtype(), wide.data(), k);
      quantize_int8(wide.data(), k, packet);
    }
  }
  Handle gathered = comm.all_gather_bytes_async(packet, bytes, packets, 0);
  return Handle(std::async(std::launch::deferred, [gathered, send, recv, packets, out, k, n, bytes, dtype, computes]() mutable {
    gathered.wait();
    if (computes) {
      std::vector<float> values(dtype == Dtype::kF32 ? 0 : k);  // 16-bit: one slice at a time, rounded once
      for (std::size_t r = 0; r < n; ++r) {
        if (dtype == Dtype::kF32) {
          dequantize_int8(packets + r * bytes, k, static_cast<float*>(out) + r * k);
        } else {
          dequantize_int8(packets + r * bytes, k, values.data());
          narrow_from_f32(values.data(), dtype, static_cast<char*>(out) + r * k * dtype_bytes(dtype), k);
        }
      }
    }
    send.reset();
    recv.reset();
  }).share());
}

}  // namespace zero
