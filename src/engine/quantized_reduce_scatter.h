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
// Bytes each rank sends per unit, Q(k) = quantized_bytes(k) = 4 ceil(k/256) + ceil(k/2):
//   inside its node:  (L-1) M Q(k)       (step 2: M quantised slices to each of L-1 peers)
//   across nodes:     (M-1) Q(k)         (step 4: one quantised slice to each of M-1 peers)
// in all (N-1) Q(k), against plain stage 3's reduce-scatter of (N-1) k elements, of which
// (N-L) k = L (M-1) k cross: qgZ's across-node bytes are about 1/(4L) of a 16-bit reduce-scatter's
// and 1/(8L) of an f32 one's (0.5 bytes an element, and L times fewer elements). DeepSpeed does
// the same (all_to_all_quant_reduce) and, as here, only on more than one node: on one node
// stage 3 reduce-scatters exactly.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace zero {

class QuantizedReduceScatter {
 public:
  // Collective over `world` (it splits the pair communicators). `computes`: false in the
  // planner's dry run, where the exchanges are counted and nothing is computed. ConfigError
  // unless every node holds the same number of ranks.
  QuantizedReduceScatter(Communicator& world, bool computes);
  ~QuantizedReduceScatter();
  QuantizedReduceScatter(const QuantizedReduceScatter&) = delete;
  QuantizedReduceScatter& operator=(const QuantizedReduceScatter&) = delete;

  // ConfigError naming the nodes' sizes unless every node of `topology` has the same number.
  static void check_nodes(const NodeTopology& topology, int size);
  // The bytes one rank sends for a slice of k elements, on L ranks per node and M nodes.
  static std::uint64_t bytes_inside(std::size_t k, int ranks_per_node, int nodes);
  static std::uint64_t bytes_across(std::size_t k, int ranks_per_node, int nodes);

  // send (N k elements of dtype, host memory) reduced into recv (k): steps 1-5 above, on the
  // calling thread; recv may be this rank's slice of send. In the dry run send and recv are
  // not read or written.
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
  // acc (k f32) = the dequantised runs at first, first + stride, ... (count of them), in order.
  void sum_runs(const std::uint8_t* first, std::size_t stride, std::size_t count, std::size_t k);

  Communicator& world_;
  bool computes_;
  std::vector<std::vector<int>> node_ranks_;  // (M, L) world ranks by node and local index
  Group intra_, inter_;
  std::vector<std::uint8_t> local_send_, local_recv_;  // (L, M, Q(k)) quantised slices, step 2
  std::vector<std::uint8_t> node_send_, node_recv_;    // (M, Q(k)) quantised node sums, step 4
  std::vector<std::uint8_t> both_;                     // (2 b) a pair's exchange
  std::vector<float> slice_, acc_, run_;               // (k) f32: a slice widened, a sum, a dequantised run
  std::unique_ptr<TaskQueue> thread_;
};

}  // namespace zero
