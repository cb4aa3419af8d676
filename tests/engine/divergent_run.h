// Ranks that take different paths on purpose, for the order check (comm/order_check.h): the same
// MLP on every rank, but the last rank runs one more micro-batch per step (every stage) or one
// evaluation more before training (stage 3, whose evaluation gathers every unit). Shared by the
// thread-rank test and the mpirun test.
#pragma once

#include <chrono>
#include <string>

#include "common/error.h"
#include "engine/mlp_run.h"

namespace zero::testing {

enum class Detour { kExtraMicroBatch, kExtraEvaluation };

struct DivergenceResult {
  std::string message;  // the CommError this rank got; empty if none
  double seconds = 0;   // from the first step to the error
};

// Every rank of `comm` calls this; the last rank takes `detour`.
inline DivergenceResult run_divergent(int stage, Detour detour, Communicator& comm) {
  MlpRun run;
  run.stage = stage;
  Ledger ledger;
  Mlp mlp(run.shape);
  DivergenceResult out;
  const auto start = std::chrono::steady_clock::now();
  try {
    Engine engine(engine_config(run), mlp, comm, ledger);
    const bool odd = comm.rank() == comm.size() - 1;
    const int rows = run.global_batch / comm.size();
    for (int s = 0; s < 3; ++s) {
      mlp.set_batch(mlp_synthetic_batch(run.shape, run.seed, s, comm.rank() * rows, rows));
      if (odd && detour == Detour::kExtraEvaluation && s == 0) engine.evaluate();
      if (odd && detour == Detour::kExtraMicroBatch) engine.forward_backward(false);
      engine.forward_backward(true);
      engine.step();
    }
    engine.synchronize();
  } catch (const CommError& e) {
    out.message = e.what();
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace zero::testing
