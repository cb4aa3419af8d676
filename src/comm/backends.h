// Internal: constructors of the transports, for the factory. Not part of the public interface.
#pragma once

#include <memory>

#include <algorithm>
#include <climits>

#include "comm/communicator.h"
#include "comm/segmented.h"

namespace zero::detail {

std::unique_ptr<Transport> make_self_transport();
// Defined by mpi_comm.cpp, or by no_mpi.cpp in a build without MPI (where it throws).
std::unique_ptr<Transport> make_mpi_transport();
bool built_with_mpi();

// The MPI backend's transport limits, shared with the counting backend that mimics it: an int
// count per call, and reduce_scatter receiving every rank's piece for this rank.
inline std::size_t mpi_max_transport_elements(std::size_t element_bytes) {
  return max_segment_elements(element_bytes, INT_MAX);
}
// Its reduce-scatter receives every peer's piece in chunks of at most kMpiChunkBytes, into a ring
// of kMpiChunksInFlight chunks per peer (the chunk: small enough that summing one overlaps the
// next ones' arrival, large enough that its requests cost little next to its bytes; the ring:
// enough chunks on the wire to keep a link busy while one is summed, and a scratch bounded
// whatever k). A piece under kMpiChunksInFlight full chunks is cut into up to that many chunks of
// at least kMpiMinChunkBytes, so that summing one can overlap the next ones' transfer (summing
// 1 MiB takes 0.1-0.25 ms here, a tenth or more of moving it; the gain was within the noise of
// this machine's measurements: bench/README.md); its scratch is the piece rounded up to whole
// chunks (at most one chunk more than the piece, and never more than 4 MiB a peer).
inline constexpr std::size_t kMpiChunkBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMpiMinChunkBytes = std::size_t{64} << 10;
inline constexpr std::size_t kMpiChunksInFlight = 4;
struct MpiRing {
  std::size_t chunk = 0;   // elements per chunk (the last one may be shorter)
  std::size_t chunks = 0;  // chunks of k
  std::size_t slots = 0;   // chunks per peer in the ring
};
inline MpiRing mpi_reduce_scatter_ring(std::size_t k, std::size_t element_bytes) {
  const std::size_t most = std::max<std::size_t>(1, kMpiChunkBytes / element_bytes);
  const std::size_t least = std::max<std::size_t>(1, kMpiMinChunkBytes / element_bytes);
  const std::size_t chunk = std::min(k, std::min(most, std::max(least, (k + kMpiChunksInFlight - 1) / kMpiChunksInFlight)));
  const std::size_t chunks = k == 0 ? 0 : (k - 1) / chunk + 1;
  return {chunk, chunks, std::min(chunks, kMpiChunksInFlight)};
}
// Between 2 ranks its deterministic all-reduce is one exchange of the whole buffer (each rank sends
// all of it and sums both in rank order as the peer's chunks arrive, into the same ring): the
// bytes of a reduce-scatter and an all-gather (k to the peer in each), in one round instead of two.
inline bool mpi_exchanges_all_reduce(int size) { return size == 2; }
// (In whole floats: the scratch is allocated as floats.) kAllReduce: only where it exchanges.
inline std::uint64_t mpi_transport_scratch_bytes(Collective kind, std::size_t k, std::size_t element_bytes, int size) {
  const bool exchange = kind == Collective::kAllReduce && mpi_exchanges_all_reduce(size);
  if (kind != Collective::kReduceScatter && !exchange) return 0;
  const MpiRing ring = mpi_reduce_scatter_ring(exchange ? k * static_cast<std::size_t>(size) : k, element_bytes);
  const std::uint64_t bytes = static_cast<std::uint64_t>(ring.slots) * static_cast<std::uint64_t>(size - 1) * ring.chunk * element_bytes;
  return (bytes + sizeof(float) - 1) / sizeof(float) * sizeof(float);
}

// fast mode: MPI sums f32 itself (MPI_Reduce_scatter_block into scratch of k elements, and
// MPI_Allreduce in place); it has no sum of bf16/f16.
inline bool mpi_native_reduction(Dtype dtype) { return dtype == Dtype::kF32; }
inline std::uint64_t mpi_native_scratch_bytes(std::size_t k, std::size_t element_bytes) {
  return (static_cast<std::uint64_t>(k) * element_bytes + sizeof(float) - 1) / sizeof(float) * sizeof(float);
}

}  // namespace zero::detail
