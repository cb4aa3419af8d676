// qgZ (ZeRO++'s quantised gradients, zero_optimization.zero_quantized_gradients): stage 3's
// gradient reduce-scatter as a hierarchical all-to-all of 4-bit blocks (gradient_quantize.h),
// first inside each node, then across the nodes, summed in f32 after dequantisation.
//
// Words: N ranks on M nodes of L ranks each (every node the same L); rank (n, l) is the l-th
// rank, in rank order, of node n. A unit's gradient is N slices of k elements, slice r for rank
// r (the flat layout's). On every rank, for one unit:
//   1. quantise each of the N slices (its own run: blocks never straddle two slices);
//   2. inside the node, an all-to-all: to local peer j go the M slices of the ranks (m, j),
//      m = 0..M-1; (each rank's own part stays with it, quantised as the others are);
//   3. for each m, dequantise the L slices received for rank (m, l) and add them in f32 in
//      local rank order, ((d_0 + d_1) + d_2) + ...; quantise that node sum again;
//   4. across the nodes, an all-to-all among the ranks of local index l: to rank (m, l) goes the
//      node sum for it;
//   5. dequantise the M node sums received and add them in node order: this rank's slice.
// Every sum has one fixed order, so a run gives the same bits run after run (not stage 3's: the
// values are quantised). An all-to-all is rounds of disjoint pairs (pair_rounds.h), each pair a
// 2-rank communicator split once from the world, exchanging with a 2-rank all_gather.
//
// Bytes each rank sends per unit, Q(k) = int4_bytes(k) = 4 ceil(k/64) + ceil(k/2):
//   inside its node:  (L-1) M Q(k)       (step 2: M quantised slices to each of L-1 peers)
//   across nodes:     (M-1) Q(k)         (step 4: one quantised slice to each of M-1 peers)
// in all (N-1) Q(k), against plain stage 3's reduce-scatter of (N-1) k elements, of which
// (N-L) k = L (M-1) k cross: qgZ's across-node bytes are about 1/(4L) of a 16-bit reduce-scatter's
// and 1/(8L) of an f32 one's (0.5625 bytes an element with the scales, and L times fewer elements). DeepSpeed does
// the same (all_to_all_quant_reduce) and, as here, only on more than one node: on one node
// stage 3 reduce-scatters exactly.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "device/device.h"

namespace zero {

class QuantizedReduceScatter {
 public:
  // Collective over `world` (it splits the pair communicators); slices of at most max_k
  // elements. Its scratch is allocated here from `device` (comm_buffers, device tier; the
  // device's memory must be host memory): scratch_bytes(max_k). A device that does not compute
  // (the planner's dry run) counts the exchanges and computes nothing. ConfigError unless every
  // node holds the same number of ranks.
  QuantizedReduceScatter(Communicator& world, Device& device, std::size_t max_k);
  ~QuantizedReduceScatter();
  QuantizedReduceScatter(const QuantizedReduceScatter&) = delete;
  QuantizedReduceScatter& operator=(const QuantizedReduceScatter&) = delete;

  // ConfigError naming the nodes' sizes unless every node of `topology` has the same number.
  static void check_nodes(const NodeTopology& topology, int size);
  // The scratch for slices of k elements on N ranks as M nodes: (2N + 4M) Q(k) bytes of
  // quantised blocks (step 2's sent and received, step 4's, a pair's exchange) and 3k f32.
  static std::uint64_t scratch_bytes(std::size_t k, int ranks, int nodes);

  // send (N k elements of dtype, host memory; k <= max_k) reduced into recv (k): steps 1-5
  // above, on the calling thread; recv may be this rank's slice of send. In the dry run send and
  // recv are not read or written.
  void run(const void* send, void* recv, std::size_t k, Dtype dtype);
  // run() on this object's own thread, in issue order; `label` and `context` are the issuing
  // thread's (the order check compares them across the ranks).
  Handle run_async(const void* send, void* recv, std::size_t k, Dtype dtype, std::string label, std::string context);

  // What the pair communicators have counted, filed under reduce_scatter (what they carry).
  Traffic traffic() const;

 private:
  struct Group {
    std::vector<int> members;  // world ranks, in the group's order
    int index = 0;             // this rank's place among them
    std::vector<int> partner;  // (rounds) the member met each round, -1: none
    std::vector<std::unique_ptr<Communicator>> pairs;  // (rounds) null when sitting out
  };
  Group make_group(std::vector<int> members);
  // An all-to-all in `group`: send holds one block of b bytes per member, recv gets member i's
  // block for this rank in its block i.
  void exchange(Group& group, const std::uint8_t* send, std::uint8_t* recv, std::size_t b);
  // acc_ (k f32) = the dequantised runs at first, first + stride, ... (count of them), in order.
  void sum_runs(const std::uint8_t* first, std::size_t stride, std::size_t count, std::size_t k);
  // The scratch laid out for slices of k elements (the regions below).
  void lay_out(std::size_t k);

  Communicator& world_;
  bool computes_;
  std::size_t max_k_;
  std::vector<std::vector<int>> node_ranks_;  // (M, L) world ranks by node and local index
  Group intra_, inter_;
  DeviceBuffer blocks_;  // (scratch_bytes(max_k) / 4) f32, device tier (host memory), comm_buffers: the regions below
  // Regions of blocks_ for the current k: quantised slices of step 2 (L, M, Q(k)) sent and
  // received; node sums of step 4 (M, Q(k)) sent and received; a pair's exchange (2, M Q(k)).
  std::uint8_t *local_send_ = nullptr, *local_recv_ = nullptr, *node_send_ = nullptr, *node_recv_ = nullptr, *both_ = nullptr;
  float* base_ = nullptr;  // blocks_'s host address (a device that computes)
  float *slice_ = nullptr, *acc_ = nullptr, *run_ = nullptr;  // (k) f32 each: a slice widened, a sum, a dequantised run
  std::vector<std::uint8_t> dry_;  // the dry run's stand-in for what a pair sends and receives (3 M Q(k))
  std::unique_ptr<TaskQueue> thread_;
};

}  // namespace zero
