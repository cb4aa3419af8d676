// Trains the classifier (classifier.h) with zero's engine, sharded over ranks that are threads of
// this process or MPI processes, and prints the loss and a checksum of the final weights: the
// same bits in every ZeRO stage, for a given number of ranks.
//
//   mlp_classifier --stage 3 --ranks 2          2 ranks as threads
//   mpirun -np 2 mlp_classifier --stage 3       2 MPI processes
//   --save DIR: also writes DIR/initial.f32 and DIR/final.f32, the weights as raw floats in the
//   order of the units' declarations (tests/library/ checks the training against NumPy on them)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "classifier.h"
#include "zero/zero.h"

namespace {

struct Options {
  int stage = 0;
  int ranks = 2;    // thread ranks, when not started by mpirun
  int steps = 60;
  int global_batch = 64;  // rows per step, split evenly over the ranks
  int inputs = 8, hidden = 16;
  std::uint64_t seed = 7;
  std::string save;  // a directory for the initial and final weights, or empty
};

int whole_number(const std::string& flag, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < 0 || value > 1'000'000) {
    throw zero::ConfigError("[example] " + flag + " takes a whole number, not '" + text + "'");
  }
  return static_cast<int>(value);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw zero::ConfigError("[example] " + flag + " needs a value");
    const char* text = argv[++i];
    if (flag == "--save") o.save = text;
    else if (flag == "--stage") o.stage = whole_number(flag, text);
    else if (flag == "--ranks") o.ranks = whole_number(flag, text);
    else if (flag == "--steps") o.steps = whole_number(flag, text);
    else throw zero::ConfigError("[example] unknown flag " + flag + ": use --stage, --ranks, --steps, --save");
  }
  return o;
}

// FNV-1a over the weights' bytes: equal checksums, equal bits.
std::uint64_t checksum(const std::vector<float>& w) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (float f : w) {
    unsigned char bytes[sizeof f];
    std::memcpy(bytes, &f, sizeof f);
    for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  }
  return h;
}

void save(const std::vector<float>& weights, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  const bool ok = f && std::fwrite(weights.data(), sizeof(float), weights.size(), f) == weights.size();
  if ((f && std::fclose(f) != 0) || !ok) throw zero::Error("[example] cannot write " + path + ": check the --save directory");
}

// The mean of every rank's loss, in rank order (the same float on every rank).
float mean_loss(zero::Communicator& comm, float loss) {
  std::vector<float> all(comm.size());
  comm.all_gather(std::span<const float>(&loss, 1), all);
  double sum = 0.0;
  for (float l : all) sum += l;
  return static_cast<float>(sum / comm.size());
}

// One rank's training run: what DeepSpeed's engine loop is, on zero's engine.
void train(const Options& o, zero::Communicator& comm) {
  const int rows = o.global_batch / comm.size();
  if (rows * comm.size() != o.global_batch) {
    throw zero::ConfigError("[example] the global batch of " + std::to_string(o.global_batch) + " rows does not divide over " +
                            std::to_string(comm.size()) + " ranks");
  }
  example::Classifier model(o.inputs, o.hidden);
  zero::EngineConfig config;
  config.stage = o.stage;
  config.seed = o.seed;
  config.adam.lr = 0.03f;
  zero::Ledger ledger;  // this rank's memory, by tier and category
  zero::Engine engine(config, model, comm, ledger);

  const std::vector<float> initial = engine.full_parameters();  // a collective in stage 3
  if (comm.rank() == 0 && !o.save.empty()) save(initial, o.save + "/initial.f32");
  float first = 0.0f, last = 0.0f;
  for (int step = 0; step < o.steps; ++step) {
    model.set_batch(example::make_batch(o.inputs, o.seed, step, comm.rank() * rows, rows));
    last = mean_loss(comm, engine.train_step());
    if (step == 0) first = last;
  }
  const std::vector<float> weights = engine.full_parameters();
  if (comm.rank() == 0 && !o.save.empty()) save(weights, o.save + "/final.f32");
  if (comm.rank() == 0) {
    std::printf("stage %d, %d ranks (%s): loss %.4f -> %.4f after %d steps; weights %zu floats, checksum %016llx\n", o.stage,
                comm.size(), comm.backend().c_str(), first, last, o.steps, weights.size(),
                static_cast<unsigned long long>(checksum(weights)));
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    if (zero::launched_by_mpi(nullptr)) {
      auto comm = zero::make_named_communicator("mpi");
      try {
        train(o, *comm);
      } catch (const zero::Error& e) {  // the other ranks may wait in a collective: end them all
        std::fprintf(stderr, "mlp_classifier: rank %d: %s\n", comm->rank(), e.what());
        comm->abort(1);
      }
    } else {
      zero::ThreadWorld world(o.ranks);
      world.run([&](int rank) { train(o, *world.communicator(rank)); });
    }
    return 0;
  } catch (const zero::Error& e) {
    std::fprintf(stderr, "mlp_classifier: %s\n", e.what());
    return 1;
  }
}
