// Internal to the engine: the collectives the stages issue, on engine memory. Every collective
// of the engine goes through here, so this is the one place where device spans become what the
// transport reads (Device::transport), and where bucket sizes bound each collective's pieces.
//
// In the planner's dry run (a device that does not compute, over the counting communicator)
// nothing runs, so the communication scratch a backend would allocate while a collective runs
// (Communicator::scratch_bytes) is reserved here instead. A collective is outstanding from its
// issue until something first waits for it; the comm thread runs one collective at a time, one
// of the outstanding ones, so the ledger holds the largest outstanding scratch: never less than a
// running backend holds at that moment.
#pragma once

#include <functional>
#include <memory>

#include "comm/communicator.h"
#include "device/device.h"

namespace zero {

class QuantizedReduceScatter;
class TaskQueue;

class Collectives {
 public:
  // Buckets in elements of all ranks together (DeepSpeed's meaning); 0: unbounded. Every
  // reduction here is of gradients: each send is divided by predivide first (when not 1), on the
  // compute stream, so every stage divides the same numbers before the same rank-order sum.
  // `overlap` (DeepSpeed's overlap_comm): a reduction runs while backward goes on; false: it is
  // waited for where it is issued, so backward does not go on meanwhile.
  Collectives(Communicator& comm, Device& device, std::size_t reduce_bucket, std::size_t gather_bucket, double predivide = 1.0,
              bool overlap = true);
  ~Collectives();
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;

  // Hybrid sharding: `comm` is this rank's shard group and `replicas` the ranks holding the same
  // slices in the other groups. Every reduce_scatter's result (this rank's slice, summed over its
  // group) is then all-reduced across the replicas, so that it holds the sum over the world.
  // That all-reduce is issued once the group's reduce-scatter has completed, in issue order, by
  // one thread of its own (every rank issues the replicas' collectives in the same order); the
  // handle reduce_scatter returns completes after both.
  void set_replicas(Communicator* replicas);
  // qgZ: every reduce_scatter runs as `quantized`'s hierarchical all-to-all of 4-bit blocks
  // (engine/quantized_reduce_scatter.h) instead of the communicator's; null: the communicator's.
  // (It refuses device memory the CPU cannot read, as the stage-3 reduce-scatter hands it that.)
  void set_quantized_reduce(QuantizedReduceScatter* quantized);

  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  Communicator& communicator() { return comm_; }

  // As Communicator's (communicator.h): send N*k -> recv k (rank order sum), send k -> recv N*k,
  // data N*k summed everywhere. recv of reduce_scatter may be this rank's slot of send. `unit`
  // (the unit's name) labels the collective for the order check (comm/order_check.h), so ranks
  // that diverge are told at which unit.
  Handle reduce_scatter(const DeviceSpan& send, const DeviceSpan& recv, const std::string& unit);
  Handle all_gather(const DeviceSpan& send, const DeviceSpan& recv, const std::string& unit);
  Handle all_reduce(const DeviceSpan& data, const std::string& unit);

 private:
  // A reduction as issued, waited for at once without overlap.
  Handle settle(Handle reduction) const;
  // The dry run's reservation around `issued`: a collective of k elements per rank.
  Handle reserve_scratch(const Communicator& comm, Collective kind, std::size_t k, std::size_t segment, Dtype dtype, Handle issued);
  // Hybrid sharding: after `group` (the group's reduce-scatter into recv), recv all-reduced across
  // the replicas.
  Handle across_replicas(Handle group, const DeviceSpan& recv, const std::string& unit);

  // Where the communicator cannot read the device's memory (the mpi backend on a cuda device), a
  // collective runs on host copies (collectives_staged.cpp): send is copied into host scratch
  // (host tier, comm_buffers), `issue` runs the collective there, and the result is copied into
  // recv when the collective is first waited for.
  bool staged() const;
  Handle through_host(const DeviceSpan& send, const DeviceSpan& recv, const std::function<Handle(void*, void*)>& issue);

  class DryScratch;  // the dry run's outstanding scratch

  Communicator& comm_;
  Device& device_;
  std::shared_ptr<DryScratch> dry_;
  bool overlap_;  // shared with the handles it gives out, which may outlive this
  std::size_t reduce_bucket_;   // elements of all ranks together in one piece of a reduction
  std::size_t reduce_segment_;  // elements per rank per piece of a reduction (0: the transport's limit)
  std::size_t gather_segment_;  // of a gather
  float predivide_;             // gradients are divided by this before they are summed
  Communicator* replicas_ = nullptr;  // hybrid sharding: the same slice's ranks in the other groups
  std::size_t replica_segment_ = 0;   // elements per rank per piece of their all-reduce
  std::unique_ptr<TaskQueue> chain_;  // issues their all-reduces after the group's reduce-scatters
  QuantizedReduceScatter* quantized_ = nullptr;  // qgZ's reduce-scatter, when on
};

}  // namespace zero
