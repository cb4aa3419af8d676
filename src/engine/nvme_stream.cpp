#include "engine/nvme_stream.h"

#include <sys/statvfs.h>

#include <algorithm>

#include "common/error.h"

namespace zero {

std::vector<Segment> cut_segments(const std::vector<Segment>& segments, std::size_t begin, std::size_t n) {
  std::vector<Segment> out;
  for (const Segment& s : segments) {
    const std::size_t lo = std::max(s.offset, begin), hi = std::min(s.offset + s.numel, begin + n);
    if (lo >= hi) continue;
    Segment c = s;
    c.offset = lo - begin;
    c.numel = hi - lo;
    if (s.param >= 0) c.param_offset = s.param_offset + (lo - s.offset);
    out.push_back(c);
  }
  return out;
}

NvmeStream::NvmeStream(const std::vector<OptimizerPart>& parts, const NvmeOptions& nvme, std::vector<std::size_t> tensors)
    : tensors_(std::move(tensors)) {
  const auto aligned = [](std::uint64_t b) { return (b + io::kDirectAlignment - 1) / io::kDirectAlignment * io::kDirectAlignment; };
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const std::size_t size = parts[k].params.size();
    for (std::size_t b = 0; b < size; b += nvme.sub_group_size) {
      SubGroup g{static_cast<int>(k), b, std::min(nvme.sub_group_size, size - b), {}, {}};
      g.segments = cut_segments(parts[k].segments, b, g.numel);
      for (std::size_t s = 0; s < tensors_.size(); ++s) {
        g.offsets.push_back(file_bytes_);
        file_bytes_ += aligned(bytes(g, s));
      }
      largest_ = std::max(largest_, g.numel);
      groups_.push_back(std::move(g));
    }
  }
  const std::size_t slots = std::min<std::size_t>(nvme.buffer_count, std::max<std::size_t>(1, groups_.size()));
  slots_.resize(slots);
  for (Slot& s : slots_) s.buffers.resize(tensors_.size()), s.addresses.resize(tensors_.size());
  io_.block_size = nvme.block_size;
  io_.queue_depth = nvme.queue_depth;
}

NvmeStream::~NvmeStream() { file_.reset(); }

void NvmeStream::open(const std::string& nvme_path, int rank, const std::string& name) {
  folder_.emplace(nvme_path, rank);
  check_disk_room(file_bytes_, nvme_path);
  file_.emplace(folder_->file(name), io_, true);
}

void NvmeStream::check_disk_room(std::uint64_t bytes, const std::string& nvme_path) const {
  struct statvfs st {};
  if (::statvfs(folder_->path().c_str(), &st) != 0) return;
  const std::uint64_t free = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  if (bytes > free) {
    throw io::IoError(cat("[io] offload nvme_path ", nvme_path, " has ", format_bytes_beside(free, bytes),
                          " free but this rank's swap file needs ", format_bytes_beside(bytes, free),
                          ": free space, use more ranks, or name a larger disk"));
  }
}

void NvmeStream::transfer_part(Device& dev, int part, std::size_t s, std::size_t t, const DeviceSpan& staging, bool to_file,
                               ShardOptimizer::DiskTraffic& traffic) {
  for (const SubGroup& g : groups_) {
    if (g.part != part) continue;
    const std::uint64_t at = g.offsets.at(s) + t * g.numel * sizeof(float);
    char* data = static_cast<char*>(dev.transport(staging.sub(g.begin, g.numel)));
    if (to_file) file_->write(at, data, g.numel * sizeof(float));
    else file_->read(at, data, g.numel * sizeof(float));
    (to_file ? traffic.written : traffic.read) += g.numel * sizeof(float);
  }
  file_->wait_all();
}

void NvmeStream::run(Device& dev, unsigned read, unsigned write, const Work& work, ShardOptimizer::DiskTraffic& traffic) {
  const std::size_t n = slots_.size(), count = groups_.size();
  const auto each = [&](unsigned mask, std::uint64_t& counter) {
    for (const SubGroup& g : groups_)
      for (std::size_t s = 0; s < tensors_.size(); ++s)
        if (mask & (1u << s)) counter += bytes(g, s);
  };
  each(read, traffic.read);    // counted in a dry run too: the planner's disk traffic
  each(write, traffic.written);
  const std::size_t ahead = n >= 3 ? n - 2 : n - 1;  // leaves the slot whose write is in flight
  std::size_t next_read = 0;
  for (std::size_t i = 0; i < count; ++i) {
    Slot& slot = slots_[i % n];
    if (file_) {
      for (; read && next_read <= i + ahead && next_read < count; ++next_read) start_reads(next_read, read);
      if (!read) finish(slot.writes);
      finish(slot.reads);
    }
    work(groups_[i], i % n);
    if (file_ && read && i + 1 < count) finish(slots_[(i + 1) % n].reads);  // drives the ring while the CPU works
    dev.host().synchronize();
    if (!file_) continue;
    const SubGroup& g = groups_[i];
    for (std::size_t s = 0; s < tensors_.size(); ++s)
      if (write & (1u << s)) slot.writes.push_back(file_->write(g.offsets[s], slot.addresses[s], bytes(g, s)));
  }
  if (!file_) return;
  file_->wait_all();
  for (Slot& s : slots_) s.reads.clear(), s.writes.clear();
}

void NvmeStream::initialise(Device& dev, const OptimizerContext& ctx, ShardOptimizer::DiskTraffic& traffic) {
  run(dev, 0, 1u, [&](const SubGroup& g, std::size_t i) {
    dev.fill(dev.host(), slots_[i].buffers[0].sub(g.numel, 2 * g.numel), 0.0f);
    dev.init(dev.host(), ctx.layout.unit(ctx.parts[g.part].unit), g.segments, ctx.seed, tensor(i, g, 0, 0));
  }, traffic);
}

void NvmeStream::start_reads(std::size_t i, unsigned read) {
  Slot& slot = slots_[i % slots_.size()];
  finish(slot.writes);
  const SubGroup& g = groups_[i];
  for (std::size_t s = 0; s < tensors_.size(); ++s)
    if (read & (1u << s)) slot.reads.push_back(file_->read(g.offsets[s], slot.addresses[s], bytes(g, s)));
}

void NvmeStream::finish(std::vector<io::AsyncFile::Ticket>& tickets) {
  const std::vector<io::AsyncFile::Ticket> waiting = std::move(tickets);
  tickets.clear();
  for (io::AsyncFile::Ticket t : waiting) file_->wait(t);
}

}  // namespace zero
