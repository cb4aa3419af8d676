// The piece arithmetic of segmented collectives (segmented.cpp), alone so it can be tested alone.
//
// A collective of k elements per rank runs as pieces of at most s elements per rank: piece j
// covers elements [j*s, j*s + length(j)) of every rank's slice.
#pragma once

#include <cstddef>

namespace zero {

struct Pieces {
  std::size_t count = 1;  // ceil(k/s); a collective of 0 elements is still one (empty) call
  std::size_t k = 0;      // elements per rank of the whole collective
  std::size_t s = 1;      // elements per rank of every piece but the last
  std::size_t offset(std::size_t j) const { return j * s; }
  std::size_t length(std::size_t j) const { return j + 1 < count ? s : k - j * s; }
  std::size_t largest() const { return count == 1 ? k : s; }  // the first piece's length
};

// k elements per rank in pieces of at most s (>= 1) elements per rank.
Pieces split_into_pieces(std::size_t k, std::size_t s);

// The most elements of `element_bytes` bytes one MPI call may carry per rank when its count
// argument may not exceed `limit` (INT_MAX for MPI's int counts). The mpi backend counts a piece
// in the widest unit of 1, 2, 4 or 8 bytes that divides the element's size, so elements of
// 1, 2, 4 or 8 bytes are counted one each (limit elements), and a 12-byte element counts as three
// 4-byte units (limit / 3 elements). At least 1.
std::size_t max_segment_elements(std::size_t element_bytes, std::size_t limit);

}  // namespace zero
