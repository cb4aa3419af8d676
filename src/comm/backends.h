// Internal: constructors of the backends, for the factory. Not part of the public interface.
#pragma once

#include <memory>

#include "comm/communicator.h"

namespace zero::detail {

std::unique_ptr<Communicator> make_self_communicator(CommOptions options);
// Defined by mpi_comm.cpp, or by no_mpi.cpp in a build without MPI (where it throws).
std::unique_ptr<Communicator> make_mpi_communicator(CommOptions options);
bool built_with_mpi();

}  // namespace zero::detail
