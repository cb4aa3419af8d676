// Internal to the engine: where this rank's stage-3 parameter slices live (offload_param). On
// the device or the host tier, in one shard buffer; on the NVMe tier (ZeRO-Infinity's parameter
// offload), in a swap file of the rank's own (io/), read a unit slice at a time into a host
// buffer ahead of the unit's gather, and written back as the optimizer updates it.
//
// Words:
//   slice    unit u's elements this rank holds (layout.unit(u).slice); in the file at its own
//            offset, a multiple of the I/O alignment (O_DIRECT).
//   buffer   one of buffer_count host buffers, each the size of the largest slice (DeepSpeed
//            allocates buffer_size elements; no slice may be larger, and none needs more). A read
//            holds one from read_ahead() or host_slice() until done_with().
//   window   on the NVMe tier, what the optimizer's parts name as their parameters: buffer 0,
//            shared by every part (ParamSink). The optimizer writes a range of one part into it
//            and calls written(); it does so only between micro-batches, when no read holds a
//            buffer. read_ahead() never takes it, so host_slice() always finds a buffer.
//
// In the planner's dry run (a device that does not compute) nothing touches a disk: the file's
// bytes are counted in the ledger's nvme tier and its traffic in traffic().
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "engine/disk_bytes.h"
#include "engine/stage.h"
#include "io/async_file.h"
#include "io/swap_folder.h"

namespace zero {

class ParamHome final : public ParamSink {
 public:
  // ConfigError when a slice is larger than offload_param.buffer_size; IoError when the swap
  // folder or file cannot be made.
  explicit ParamHome(const StageContext& ctx);
  ~ParamHome() override;
  ParamHome(const ParamHome&) = delete;
  ParamHome& operator=(const ParamHome&) = delete;

  bool on_disk() const { return ctx_.param_shard_tier == Tier::kNvme; }
  // The span the optimizer's part of unit u names: the slice in the shard, or the window.
  DeviceSpan part(int u) const;
  // Unit u's slice set to the counter-based initial values every placement starts from.
  void initialise(int u, const std::vector<Segment>& segments);

  // On the NVMe tier: starts reading unit u's slice into a free buffer, unless its read has
  // started already; false when every buffer but the window is taken.
  bool read_ahead(int u);
  // Unit u's slice in a host buffer, its read waited for (started first if need be).
  DeviceSpan host_slice(int u);
  void done_with(int u);
  // Reads ahead that no gather took (the schedule changed course) are waited for and dropped:
  // after the step they would be stale.
  void drop_reads();

  void written(int unit, std::size_t begin, const DeviceSpan& range) override;
  ShardOptimizer::DiskTraffic traffic() const { return traffic_; }

 private:
  struct Read {
    int buffer = -1;
    std::optional<io::AsyncFile::Ticket> ticket;
  };

  int free_buffer(int first) const;
  void start_read(int u, int buffer);
  void wait(Read& r);
  char* address(const DeviceSpan& s) { return static_cast<char*>(ctx_.device.transport(s)); }

  StageContext ctx_;
  DeviceBuffer shard_;                     // (shard_numel) compute dtype, device or host tier; empty on the NVMe tier
  std::vector<std::uint64_t> offsets_;     // (num_units) NVMe tier: each slice's offset in the file
  std::unique_ptr<DiskBytes> disk_;        // nvme tier: the file's bytes
  std::optional<io::SwapFolder> folder_;   // before the file: removed after it
  std::vector<DeviceBuffer> buffers_;      // (buffer_count) (largest slice) compute dtype, host tier, parameters; before the file: freed after its requests
  std::optional<io::AsyncFile> file_;      // the slices, compute dtype; absent in a dry run
  std::vector<int> holder_;                // (buffer_count) the unit whose read holds each buffer, -1: free
  std::vector<std::optional<Read>> reads_;  // (num_units) the reads started and not yet done with
  ShardOptimizer::DiskTraffic traffic_;
};

}  // namespace zero
