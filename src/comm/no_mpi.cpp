// Chosen by CMake instead of mpi_comm.cpp when zero is built without MPI.
#include "comm/backends.h"
#include "common/error.h"

namespace zero::detail {

std::unique_ptr<Transport> make_mpi_transport() {
  throw CommError("[comm] this zero was built without MPI: install Open MPI (scripts/setup.sh) and rebuild");
}
bool built_with_mpi() { return false; }

}  // namespace zero::detail
