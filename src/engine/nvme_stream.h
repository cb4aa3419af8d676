// Internal to the engine: the optimizers on the NVMe tier (optimizer_nvme.cpp, plain Adam;
// optimizer_zenflow_nvme.cpp, ZenFlow's CPU side) stream their state between one swap file per
// rank and a few host buffers, a sub-group at a time (ZeRO-Infinity's optimizer offload to disk).
//
// Words:
//   sub-group  at most sub_group_size elements of one part: what one swap-in holds.
//   stretch    one of a sub-group's runs of f32 tensors in the file, each starting at a multiple of
//              the I/O alignment (O_DIRECT), read and written whole: plain Adam has one,
//              [master | m | v]; ZenFlow a second, its accumulated gradient, which the steps
//              between its CPU updates read and write alone.
//   slot       one of buffer_count host buffers per stretch, each the size of the largest sub-group's.
//
// The pipeline (the paper's overlap of disk and CPU): while the CPU works on sub-group i in its
// slot, the reads of the next sub-groups and the write of sub-group i-1 are in flight.
//
// In the planner's dry run (a device that does not compute) nothing touches a disk: the file is
// never opened, and only the bytes the steps would move are counted.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/optimizer.h"
#include "io/async_file.h"
#include "io/swap_folder.h"

namespace zero {

struct SubGroup {
  int part = 0;               // index in the context's parts
  std::size_t begin = 0;      // first element in the part
  std::size_t numel = 0;
  std::vector<std::uint64_t> offsets;  // (stretches) where each stretch starts in the file
  std::vector<Segment> segments;       // of the part's, cut to [begin, begin + numel) and made relative to begin
};

class NvmeStream {
 public:
  // Stretch s of a sub-group holds tensors[s] f32 tensors of its elements.
  NvmeStream(const std::vector<OptimizerPart>& parts, const NvmeOptions& nvme, std::vector<std::size_t> tensors);
  ~NvmeStream();  // waits for the file's requests (they point into the slots)

  const std::vector<SubGroup>& groups() const { return groups_; }
  std::size_t largest() const { return largest_; }  // elements of the largest sub-group
  std::size_t slot_count() const { return slots_.size(); }
  std::uint64_t bytes(const SubGroup& g, std::size_t stretch) const { return tensors_[stretch] * g.numel * sizeof(float); }
  // The host buffer of slot i for stretch s: (tensors[s] * largest()) f32, the owner's.
  void set_buffer(std::size_t i, std::size_t s, const DeviceSpan& buffer, Device& dev) {
    slots_.at(i).buffers.at(s) = buffer;
    slots_[i].addresses.at(s) = dev.computes() ? static_cast<char*>(dev.transport(buffer)) : nullptr;
  }
  // Tensor t of stretch s of the sub-group in slot i.
  DeviceSpan tensor(std::size_t i, const SubGroup& g, std::size_t s, std::size_t t) const {
    return slots_[i].buffers[s].sub(t * g.numel, g.numel);
  }

  // Makes the rank's swap folder and file `name` in it, checking the disk's room first (the
  // engine run for real; a dry run never calls it).
  void open(const std::string& nvme_path, int rank, const std::string& name);
  io::AsyncFile* file() { return file_ ? &*file_ : nullptr; }
  // Stretch 0, [master | m | v], written with the initial state: masters from the counter-based
  // initialisation (the values every other placement starts from), moments zero.
  void initialise(Device& dev, const OptimizerContext& ctx, ShardOptimizer::DiskTraffic& traffic);

  // Every sub-group in order through the slots: the stretches in `read` (a bit each) read, `work`
  // run (it queues on `dev`'s host stream, which is waited for), the stretches in `write` written
  // back. Reads run up to a few sub-groups in front, and the previous sub-group's writes are in
  // flight, while the CPU works on the current one. Counts the bytes in `traffic`.
  using Work = std::function<void(const SubGroup&, std::size_t slot)>;
  void run(Device& dev, unsigned read, unsigned write, const Work& work, ShardOptimizer::DiskTraffic& traffic);
  // Tensor t of stretch s of every sub-group of part `part`, between the file and `staging` (a
  // host-tier span of the part's size), a sub-group at a time, for checkpoints. Waits.
  void transfer_part(Device& dev, int part, std::size_t s, std::size_t t, const DeviceSpan& staging, bool to_file,
                     ShardOptimizer::DiskTraffic& traffic);

 private:
  struct Slot {
    std::vector<DeviceSpan> buffers;  // (stretches) host tier
    std::vector<char*> addresses;     // (stretches) of the buffers, for the file's requests
    std::vector<io::AsyncFile::Ticket> reads, writes;
  };
  void start_reads(std::size_t i, unsigned read);
  void finish(std::vector<io::AsyncFile::Ticket>& tickets);
  void check_disk_room(std::uint64_t bytes, const std::string& nvme_path) const;

  std::vector<std::size_t> tensors_;
  std::vector<SubGroup> groups_;
  std::uint64_t file_bytes_ = 0;
  std::size_t largest_ = 0;
  io::IoOptions io_;
  std::optional<io::SwapFolder> folder_;  // before the file: removed after it
  std::vector<Slot> slots_;
  std::optional<io::AsyncFile> file_;     // absent in a dry run
};

// Segments [begin, begin + n) of `segments`, with offsets from `begin`: each element keeps its
// parameter, its index in it and its decay, so Adam and the initialisation treat it as before.
std::vector<Segment> cut_segments(const std::vector<Segment>& segments, std::size_t begin, std::size_t n);

}  // namespace zero
