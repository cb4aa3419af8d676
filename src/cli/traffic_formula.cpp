#include "cli/traffic_formula.h"

#include "common/error.h"
#include "engine/gradient_quantize.h"
#include "engine/quantize.h"
#include "memory/ledger.h"

namespace zero::cli {
namespace {

// Stage 3 with ZeRO++'s qwZ, hpZ and/or qgZ, shard group = the world (each is refused with
// hybrid sharding). The gathers: qwZ sends Q = Ψ/N int8 + a scale a block instead of Ψ/N, and
// hpZ's backward gather goes to the hpZ group (Ψ/H to each of its peers) instead of every rank.
// The gradients: stage 3's Ψ/N to each peer, or under qgZ, on M nodes of L ranks, Q4(Ψ/N) to each
// peer, where Q4(x) = ⌈x/2⌉ + 4⌈x/64⌉ bytes (engine/quantized_reduce_scatter.h), of which only
// M-1 cross nodes (one node sum per slice). The engine quantises unit by unit, each unit's blocks
// rounded up on its own: measured bytes are above the formula by a few bytes per unit and peer.
TrafficFormula zeropp_formula(int n, int per_node, int rank, std::uint64_t padded, std::uint64_t element_bytes, int micro_batches,
                              const ZeroppGathers& z) {
  ZERO_CHECK(n >= 1 && per_node >= 1 && n % per_node == 0 && rank >= 0 && rank < n, "ZeRO++ traffic formula of rank ", rank, " of ", n);
  const std::uint64_t m = static_cast<std::uint64_t>(micro_batches), psi = padded * element_bytes;
  const std::uint64_t k = padded / static_cast<std::uint64_t>(n), slice = k * element_bytes;
  const std::uint64_t gather = z.quantized_weights ? quantized_bytes(k) : slice;
  const bool hpz = z.hpz > 1;
  const std::uint64_t gathers_to_peer = m * (gather + (hpz ? 0 : gather));
  const std::uint64_t to_hpz_peer = hpz ? m * psi / static_cast<std::uint64_t>(z.hpz) : 0;
  const std::uint64_t q4 = int4_bytes(k);
  TrafficFormula f;
  f.expression = z.quantized_weights ? (hpz ? "mQ(N-1) + mΨ(H-1)/H" : "2mQ(N-1)") : hpz ? "mΨ(N-1)/N + mΨ(H-1)/H" : "2mΨ(N-1)/N";
  f.expression += z.quantized_gradients ? " + m(N-1)Q4(Ψ/N)" : " + mΨ(N-1)/N";
  if (z.quantized_weights) f.expression += cat(", Q = Ψ/N int8 + 4 B a ", kQuantBlock, "-block");
  if (z.quantized_gradients) f.expression += ", Q4(x) = ⌈x/2⌉ + 4⌈x/64⌉ B";
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    const bool across = p / per_node != rank / per_node;
    // qgZ: each peer inside the node gets Q4 once per node (M in all, summed over the L-1 peers:
    // (L-1)M), and the peer of this place on every other node once: N-1 pieces in all.
    const std::uint64_t nodes = static_cast<std::uint64_t>(n / per_node);
    const std::uint64_t grads = !z.quantized_gradients ? m * slice : across ? (p % per_node == rank % per_node ? m * q4 : 0) : m * nodes * q4;
    const std::uint64_t bytes = gathers_to_peer + grads + (hpz && p / z.hpz == rank / z.hpz ? to_hpz_peer : 0);
    f.total += bytes;
    if (across) f.across += bytes;
  }
  return f;
}

}  // namespace


// What `rank` sends each peer: `to_group` bytes to each other rank of its group, `to_replica` to
// each of its replicas (its index in the other groups); counted apart for peers on other nodes.
TrafficFormula step_traffic_formula(int stage, int n, int g, int per_node, int rank, std::uint64_t padded, std::uint64_t element_bytes,
                                    int micro_batches, const ZeroppGathers& zeropp) {
  if (stage == 3 && (zeropp.quantized_weights || zeropp.hpz > 1 || zeropp.quantized_gradients)) return zeropp_formula(n, per_node, rank, padded, element_bytes, micro_batches, zeropp);
  ZERO_CHECK(n >= 1 && g >= 1 && n % g == 0 && per_node >= 1 && rank >= 0 && rank < n, "traffic formula of rank ", rank, " of ", n,
             " in groups of ", g);
  const std::uint64_t m = static_cast<std::uint64_t>(micro_batches), psi = padded * element_bytes;
  const std::uint64_t slice = psi / static_cast<std::uint64_t>(g), piece = psi / static_cast<std::uint64_t>(n);
  TrafficFormula f;
  std::uint64_t group_slices = 0, replica_pieces = 2 * m;  // slices of Ψ/G to each group peer; pieces of Ψ/N to each replica
  switch (stage) {
    case 0: f.expression = "2Ψ(N-1)/N", group_slices = 2, replica_pieces = 0; break;
    case 1: f.expression = "2Ψ(G-1)/G + 2Ψ(R-1)/N", group_slices = 2, replica_pieces = 2; break;
    case 2: f.expression = "(m+1)Ψ(G-1)/G + 2mΨ(R-1)/N", group_slices = m + 1; break;
    default: f.expression = "3mΨ(G-1)/G + 2mΨ(R-1)/N", group_slices = 3 * m; break;
  }
  if (g == n && stage > 0) f.expression = stage == 3 ? "3mΨ(N-1)/N" : stage == 2 ? "(m+1)Ψ(N-1)/N" : "2Ψ(N-1)/N";
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    const std::uint64_t bytes = p / g == rank / g ? group_slices * slice : p % g == rank % g ? replica_pieces * piece : 0;
    f.total += bytes;
    if (p / per_node != rank / per_node) f.across += bytes;
  }
  return f;
}

std::string describe_step_traffic(const TrafficFormula& formula, std::uint64_t sent, std::uint64_t across, const char* measured_word) {
  return cat(measured_word, " ", format_bytes(sent), " (", format_bytes(sent - across), " inside the node, ", format_bytes(across),
             " across nodes); formula ", formula.expression, ": ", format_bytes(formula.total), " (", format_bytes(formula.total - formula.across),
             " inside, ", format_bytes(formula.across), " across)");
}

}  // namespace zero::cli
