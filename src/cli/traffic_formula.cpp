#include "cli/traffic_formula.h"

#include "common/error.h"
#include "memory/ledger.h"

namespace zero::cli {

// What `rank` sends each peer: `to_group` bytes to each other rank of its group, `to_replica` to
// each of its replicas (its index in the other groups); counted apart for peers on other nodes.
TrafficFormula step_traffic_formula(int stage, int n, int g, int per_node, int rank, std::uint64_t padded, std::uint64_t element_bytes,
                                    int micro_batches) {
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

TrafficFormula qgz_step_traffic_formula(int n, int per_node, int rank, std::uint64_t padded, std::uint64_t element_bytes,
                                        int micro_batches) {
  ZERO_CHECK(n >= 1 && per_node >= 1 && n % per_node == 0 && rank >= 0 && rank < n, "qgZ traffic formula of rank ", rank, " of ", n);
  const std::uint64_t m = static_cast<std::uint64_t>(micro_batches), slice = padded / static_cast<std::uint64_t>(n);
  const std::uint64_t quantised = (slice + 1) / 2 + 4 * ((slice + 63) / 64);  // Q(Ψ/N)
  TrafficFormula f;
  f.expression = "2mΨ(N-1)/N + m(N-1)Q(Ψ/N), Q(x) = ⌈x/2⌉ + 4⌈x/64⌉ bytes";
  const std::uint64_t nodes = static_cast<std::uint64_t>(n / per_node);
  for (int p = 0; p < n; ++p) {  // the all-gathers: this rank's slice to each peer, twice a micro-batch
    if (p == rank) continue;
    f.total += 2 * m * slice * element_bytes;
    if (p / per_node != rank / per_node) f.across += 2 * m * slice * element_bytes;
  }
  f.total += m * static_cast<std::uint64_t>(n - 1) * quantised;  // (L-1)M inside, M-1 across: N-1 in all
  f.across += m * (nodes - 1) * quantised;
  return f;
}

std::string describe_step_traffic(const TrafficFormula& formula, std::uint64_t sent, std::uint64_t across, const char* measured_word) {
  return cat(measured_word, " ", format_bytes(sent), " (", format_bytes(sent - across), " inside the node, ", format_bytes(across),
             " across nodes); formula ", formula.expression, ": ", format_bytes(formula.total), " (", format_bytes(formula.total - formula.across),
             " inside, ", format_bytes(formula.across), " across)");
}

}  // namespace zero::cli
