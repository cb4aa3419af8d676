// Internal: constructors of the transports, for the factory. Not part of the public interface.
#pragma once

#include <memory>

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
// (In whole floats: the scratch is allocated as floats.)
inline std::uint64_t mpi_transport_scratch_bytes(Collective kind, std::size_t k, std::size_t element_bytes, int size) {
  if (kind != Collective::kReduceScatter) return 0;
  return (static_cast<std::uint64_t>(size) * k * element_bytes + sizeof(float) - 1) / sizeof(float) * sizeof(float);
}

// fast mode: MPI sums f32 itself (MPI_Reduce_scatter_block into scratch of k elements, and
// MPI_Allreduce in place); it has no sum of bf16/f16.
inline bool mpi_native_reduction(Dtype dtype) { return dtype == Dtype::kF32; }
inline std::uint64_t mpi_native_scratch_bytes(std::size_t k, std::size_t element_bytes) {
  return (static_cast<std::uint64_t>(k) * element_bytes + sizeof(float) - 1) / sizeof(float) * sizeof(float);
}

}  // namespace zero::detail
