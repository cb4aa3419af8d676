// The traffic of one optimizer step of one rank by the formulas, beside which zero train and
// zero estimate print what was measured (or planned): the paper's, per rank, in bytes of the
// wire type, with the shard group G in place of N for hybrid sharding (mics_shard_size), and
// split into bytes inside the rank's node and across nodes.
//
// Ψ: the padded parameters; N ranks; G ranks in a shard group (N without hybrid sharding);
// R = N/G replicas of each slice; m micro-batches a step. Without persistent stage-3 units:
//   stage 0   2Ψ(N-1)/N                         all-reduce
//   stage 1   2Ψ(G-1)/G + 2Ψ(R-1)/N             reduce-scatter + all-gather in the group;
//                                              the slice all-reduced across the replicas
//   stage 2   (m+1)Ψ(G-1)/G + 2mΨ(R-1)/N         a reduce-scatter every micro-batch
//   stage 3   3mΨ(G-1)/G + 2mΨ(R-1)/N           two all-gathers and a reduce-scatter a micro-batch
// Across nodes: zero's collectives hand every peer its piece directly, so the share that
// crosses is that of the peers on other nodes: for plain stage 3, (N-L)/(N-1) of the total with
// L ranks per node (for 2 nodes of 4: 4/7); for hybrid sharding with groups inside a node, only
// the replicas' all-reduce crosses.
//
// ZeRO++ at stage 3 (docs/zeropp.md), per micro-batch, to each other rank: the reduce-scatter's
// slice Ψ/N; the forward gather's slice, as Q = Ψ/N int8 + 4 bytes of scale a block of 2048 with
// qwZ (the scales counted over the whole, so a model of many units has a few more); the backward
// gather's the same again without hpZ, and with hpZ instead Ψ/H to each other rank of its hpZ
// group, inside the node:
//   qwZ        mΨ(N-1)/N + 2mQ(N-1)       hpZ   2mΨ(N-1)/N + mΨ(H-1)/H
//   qwZ+hpZ    mΨ(N-1)/N + mQ(N-1) + mΨ(H-1)/H
#pragma once

#include <cstdint>
#include <string>

namespace zero::cli {

struct TrafficFormula {
  std::string expression;    // "3mΨ(N-1)/N", "3mΨ(G-1)/G + 2mΨ(R-1)/N"
  std::uint64_t total = 0;   // bytes rank `rank` sends in one step
  std::uint64_t across = 0;  // of them, to peers on other nodes
};

// ZeRO++'s options of stage 3: qwZ, hpZ's group size H (1: off), and qgZ (only where it runs:
// on more than one node).
struct ZeroppGathers {
  bool quantized_weights = false;
  int hpz = 1;
  bool quantized_gradients = false;
};

// For `rank` of n ranks in nodes of `per_node` consecutive ranks, shard groups of g consecutive
// ranks, `padded` parameters of `element_bytes` bytes on the wire.
TrafficFormula step_traffic_formula(int stage, int n, int g, int per_node, int rank, std::uint64_t padded, std::uint64_t element_bytes,
                                    int micro_batches, const ZeroppGathers& zeropp = {});

// "measured: 1.2 MiB (0.9 MiB inside the node, 0.3 MiB across nodes); formula 3mΨ(N-1)/N: ..."
std::string describe_step_traffic(const TrafficFormula& formula, std::uint64_t sent, std::uint64_t across, const char* measured_word);

}  // namespace zero::cli
