// The communicator factory of every backend, by name: zero's own transports ("self", "mpi"; for
// N ranks as threads of one process see thread_world.h) and the device backends' own
// communicators ("nccl" in a GPU build). A program chooses one per process, as DeepSpeed's
// init_distributed(dist_backend=...) does:
//
//   auto comm = zero::make_named_communicator(zero::launched_by_mpi(nullptr) ? "mpi" : "self");
#pragma once

#include <memory>
#include <string>

#include "zero/communicator.h"

namespace zero {

// A communicator by name: a backend's device communicator, else make_communicator's (self,
// mpi). ConfigError naming the choices for an unknown name; for "mpi" in a build without MPI, an
// error saying so.
std::unique_ptr<Communicator> make_named_communicator(const std::string& name, CommOptions options = {});
// The names of the backends' device communicators: "nccl" (for help texts and errors).
std::string device_communicator_names();

}  // namespace zero
