#include "common/error.h"
#include "comm/backends.h"

namespace zero {

std::unique_ptr<Communicator> make_communicator(const std::string& name, CommOptions options) {
  int launched = 1;
  const bool under_mpi = launched_by_mpi(&launched) && launched > 1;
  if (name == "mpi") {
    if (!detail::built_with_mpi()) {
      throw CommError(cat("[comm] this zero was built without MPI", under_mpi ? cat(", yet mpirun started it as one of ", launched, " processes") : "",
                          ": install Open MPI (scripts/setup.sh) and rebuild, or use --comm self / --comm threads"));
    }
    return std::make_unique<Communicator>(detail::make_mpi_transport(), options);
  }
  if (under_mpi) {
    throw CommError(cat("[comm] mpirun started ", launched, " processes but the '", name,
                        "' backend would make each a world of its own: use --comm mpi", detail::built_with_mpi() ? "" : " (and a zero built with MPI)"));
  }
  if (name == "self") return std::make_unique<Communicator>(detail::make_self_transport(), options);
  if (name == "threads") {
    throw ConfigError("[comm] the 'threads' backend runs several ranks in one process: create them with ThreadWorld (or zero --comm threads --ranks N)");
  }
  throw ConfigError(cat("[comm] unknown backend '", name, "': use self, threads or mpi (or a backend's device communicator)"));
}

}  // namespace zero
