// All-to-all exchanges as rounds of disjoint pairs (the circle method), shared by 1-bit Adam's
// compressed all-reduce and qgZ's quantised reduce-scatter: in each round every rank meets at
// most one partner, so a 2-rank communicator per round carries one exchange both ways.
#pragma once

namespace zero {

// Rounds that pair every rank of `ranks` with every other once: ranks - 1 (even), ranks (odd).
inline int pair_rounds(int ranks) { return ranks % 2 == 0 ? ranks - 1 : ranks; }

// Round t of the circle method over M = N (even) or N + 1 (odd: M - 1 is nobody) places: place
// M - 1 meets t, every other r meets 2t - r mod (M - 1). -1: this rank sits the round out.
inline int partner_in_round(int rank, int ranks, int t) {
  const int m = ranks % 2 == 0 ? ranks : ranks + 1;
  int p;
  if (rank == m - 1) p = t;
  else if (rank == t) p = m - 1;
  else p = ((2 * t - rank) % (m - 1) + (m - 1)) % (m - 1);
  return p < ranks ? p : -1;
}

}  // namespace zero
