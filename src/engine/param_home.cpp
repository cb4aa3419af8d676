#include "engine/param_home.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace zero {
namespace {

std::uint64_t aligned(std::uint64_t bytes) { return (bytes + io::kDirectAlignment - 1) / io::kDirectAlignment * io::kDirectAlignment; }

std::size_t largest_slice(const FlatLayout& layout) {
  std::size_t n = 0;
  for (int u = 0; u < layout.num_units(); ++u) n = std::max(n, layout.unit(u).slice);
  return n;
}

}  // namespace

ParamHome::ParamHome(const StageContext& ctx) : ctx_(ctx), reads_(ctx.layout.num_units()) {
  const FlatLayout& layout = ctx.layout;
  if (!on_disk()) {
    shard_ = ctx.device.alloc(ctx.param_shard_tier, Category::kParameters, layout.shard_numel(), "parameter shard", ctx.dtype);
    return;
  }
  const NvmeParamOptions& o = ctx.param_nvme;
  const std::size_t largest = largest_slice(layout);
  if (largest > o.buffer_size) {  // DeepSpeed asserts the same of its swap buffers
    throw ConfigError(cat("[engine] zero_optimization.offload_param.buffer_size is ", o.buffer_size, " elements, smaller than the largest unit slice "
                          "this rank holds (", largest, " elements): set buffer_size to at least ", largest, ", or use more ranks"));
  }
  std::uint64_t end = 0;
  for (int u = 0; u < layout.num_units(); ++u) {
    offsets_.push_back(end);
    end += aligned(layout.unit(u).slice * dtype_bytes(ctx.dtype));
  }
  disk_ = std::make_unique<DiskBytes>(ctx.device.ledger(), Category::kParameters, end, "parameter shard (swap file)");
  bool warned = false;
  for (int b = 0; b < o.buffer_count; ++b) {
    buffers_.push_back(ctx.device.alloc(Tier::kHost, Category::kParameters, largest, "NVMe parameter buffer (a unit slice)", ctx.dtype));
    if (ctx.pin_memory && !ctx.device.pin(buffers_.back()) && !warned) {
      std::fprintf(stderr, "zero: [offload] pin_memory: cannot page-lock the parameter buffers (%s); using pageable memory\n", std::strerror(errno));
      warned = true;
    }
  }
  holder_.assign(buffers_.size(), -1);
  if (!ctx.device.computes()) return;  // the planner's dry run: counted, not written
  folder_.emplace(o.path, ctx.comm.rank());
  // A read ahead runs to its end in the kernel while the rank computes only if all its requests
  // are there at once: the ring holds every buffer's slice (DeepSpeed's aio threads keep
  // submitting instead; zero submits from the training thread).
  io::IoOptions io;
  const std::size_t chunks = (largest * dtype_bytes(ctx.dtype) + io.block_size - 1) / io.block_size * buffers_.size();
  io.queue_depth = static_cast<int>(std::clamp<std::size_t>(chunks, static_cast<std::size_t>(io.queue_depth), 4096));
  file_.emplace(folder_->file("params.swap"), io, true);
}

ParamHome::~ParamHome() {
  for (std::optional<Read>& r : reads_) {  // the file's requests point into the buffers
    if (!r) continue;
    try {
      wait(*r);
    } catch (...) {
    }
  }
}

DeviceSpan ParamHome::part(int u) const {
  const UnitPlace& unit = ctx_.layout.unit(u);
  return on_disk() ? buffers_[0].sub(0, unit.slice) : shard_.sub(unit.shard_offset, unit.slice);
}

void ParamHome::initialise(int u, const std::vector<Segment>& segments) {
  Device& dev = ctx_.device;
  dev.init(dev.compute(), ctx_.layout.unit(u), segments, ctx_.seed, part(u));
  if (!on_disk()) return;
  dev.compute().synchronize();
  written(u, 0, part(u));
}

int ParamHome::free_buffer(int first) const {
  for (int b = first; b < static_cast<int>(holder_.size()); ++b)
    if (holder_[b] < 0) return b;
  return -1;
}

void ParamHome::start_read(int u, int buffer) {
  const DeviceSpan span = buffers_[buffer].sub(0, ctx_.layout.unit(u).slice);
  holder_[buffer] = u;
  Read& r = reads_[u].emplace();
  r.buffer = buffer;
  traffic_.read += span.bytes();
  if (file_) r.ticket = file_->read(offsets_[u], address(span), span.bytes());
}

void ParamHome::wait(Read& r) {
  if (!r.ticket) return;
  const auto t = *r.ticket;
  r.ticket.reset();
  file_->wait(t);
}

bool ParamHome::read_ahead(int u) {
  if (!on_disk() || reads_[u]) return true;
  const int b = free_buffer(1);
  if (b < 0) return false;
  start_read(u, b);
  return true;
}

DeviceSpan ParamHome::host_slice(int u) {
  ZERO_CHECK(on_disk(), "host_slice of a parameter shard in memory");
  if (!reads_[u]) {
    const int b = free_buffer(0);
    ZERO_CHECK(b >= 0, "no parameter buffer free for unit ", u);
    start_read(u, b);
  }
  Read& r = *reads_[u];
  wait(r);
  return buffers_[r.buffer].sub(0, ctx_.layout.unit(u).slice);
}

void ParamHome::done_with(int u) {
  if (!reads_[u]) return;
  wait(*reads_[u]);
  holder_[reads_[u]->buffer] = -1;
  reads_[u].reset();
}

void ParamHome::drop_reads() {
  for (int u = 0; u < ctx_.layout.num_units(); ++u) done_with(u);
}

void ParamHome::written(int unit, std::size_t begin, const DeviceSpan& range) {
  ZERO_CHECK(holder_[0] < 0 && !reads_.at(unit), "unit ", unit, "'s parameters written while a read holds them or the window");
  const std::uint64_t at = offsets_.at(unit) + begin * dtype_bytes(ctx_.dtype);
  traffic_.written += range.bytes();
  if (file_) file_->wait(file_->write(at, address(range), range.bytes()));
}

}  // namespace zero
