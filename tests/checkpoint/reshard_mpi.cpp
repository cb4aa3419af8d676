// Resharding between real MPI jobs of different sizes (tests/cli/reshard_mpi.sh runs it twice):
//
//   mpirun -np N reshard_mpi save DIR STAGE OFFLOAD DTYPE   trains 3 steps, saves DIR/a, and rank 0
//                                                           writes the trained parameters to DIR/trained.f32
//   mpirun -np M reshard_mpi load DIR STAGE OFFLOAD DTYPE   loads DIR/a at M ranks and STAGE, saves it
//                                                           again as DIR/b, and checks, bit for bit:
//     every rank's parameters (all of them, gathered) are the trained ones; every master, first and
//     second moment of DIR/b equals DIR/a's (consolidated by the documented format alone); each rank
//     read less than the whole checkpoint. Exits 1 naming the first difference.
//
// OFFLOAD: none, optimizer, optimizer+param. DTYPE: f32, bf16, f16.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "checkpoint/loader.h"
#include "checkpoint/saver.h"
#include "checkpoint/checkpoint_util.h"
#include "common/error.h"

namespace zero {
namespace {

using namespace zero::testing;

Dtype dtype_of(const std::string& s) {
  if (s == "bf16") return Dtype::kBf16;
  if (s == "f16") return Dtype::kF16;
  ZERO_CHECK(s == "f32", "dtype ", s);
  return Dtype::kF32;
}

int fail(Communicator& comm, const std::string& what) {
  std::fprintf(stderr, "FAIL (rank %d of %d): %s\n", comm.rank(), comm.size(), what.c_str());
  return 1;
}

int save(Communicator& comm, const std::string& dir, Rig& rig) {
  rig.train(3, comm);
  checkpoint::Saver saver({dir + "/a", 0, "", 256}, comm);
  saver.save(*rig.engine, 3, {{"note", "reshard_mpi"}});
  if (!saver.poll(true)) return fail(comm, "the save was not published");
  const std::vector<float> w = rig.engine->full_parameters();
  if (comm.rank() == 0) std::ofstream(dir + "/trained.f32", std::ios::binary).write(reinterpret_cast<const char*>(w.data()), w.size() * 4);
  return 0;
}

int load(Communicator& comm, const std::string& dir, Rig& rig) {
  const std::string a = dir + "/a/step-00000003";
  const checkpoint::Manifest m = checkpoint::read_manifest(a + "/manifest.json");
  std::uint64_t total = 0;
  for (const auto& f : m.files) total += f.bytes;
  const std::uint64_t read = checkpoint::load_checkpoint(*rig.engine, a, m, comm).bytes_read;
  checkpoint::Saver saver({dir + "/b", 0, "", 256}, comm);
  saver.save(*rig.engine, 3, {});  // before full_parameters, which would apply a pending delayed update
  saver.poll(true);
  const std::vector<float> loaded = rig.engine->full_parameters();
  std::vector<float> trained(loaded.size());
  std::ifstream(dir + "/trained.f32", std::ios::binary).read(reinterpret_cast<char*>(trained.data()), trained.size() * 4);
  int bad = 0;
  if (!same_bits(loaded, trained)) bad = fail(comm, "the loaded parameters differ from the trained ones");
  if (comm.size() > 1 && m.world_size > 1 && read >= total) bad = fail(comm, cat("read ", read, " of ", total, " bytes: the whole checkpoint"));
  if (comm.rank() == 0) {
    for (int u = 0; u < static_cast<int>(m.units.size()); ++u) {
      for (int t = 0; t < kNumStateTensors; ++t) {
        if (!same_bits(consolidated(a, u, t), consolidated(dir + "/b/step-00000003", u, t))) {
          bad = fail(comm, cat("unit ", u, " tensor ", m.tensors[t], " differs after the reshard"));
        }
      }
    }
    const std::vector<float> v = consolidated(a, 1, 2);
    if (!(*std::max_element(v.begin(), v.end()) > 0.0f)) bad = fail(comm, "the second moments are zero: nothing was trained");
  }
  if (bad == 0 && comm.rank() == 0) {
    std::printf("ok: %d ranks -> %d ranks: parameters, masters and moments bit-identical; rank 0 read %llu of %llu bytes\n",
                m.world_size, comm.size(), static_cast<unsigned long long>(read), static_cast<unsigned long long>(total));
  }
  return bad;
}

}  // namespace
}  // namespace zero

int main(int argc, char** argv) {
  using namespace zero;
  if (argc != 6) {
    std::fprintf(stderr, "usage: reshard_mpi save|load DIR STAGE OFFLOAD DTYPE\n");
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  auto comm = make_communicator("mpi", {std::chrono::seconds(60), nullptr});
  int bad = 0;
  try {
    zero::testing::Rig rig(std::stoi(argv[3]), argv[4], *comm, dtype_of(argv[5]));
    bad = mode == "save" ? save(*comm, dir, rig) : load(*comm, dir, rig);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL (rank %d): %s\n", comm->rank(), e.what());
    bad = 1;
  }
  // Every rank's verdict: one rank's failure fails the job.
  std::uint8_t mine = static_cast<std::uint8_t>(bad), any = 0;
  std::vector<std::uint8_t> all(comm->size());
  comm->all_gather_bytes(&mine, 1, all.data());
  for (std::uint8_t b : all) any |= b;
  return any ? 1 : 0;
}
