// `zero bench train`: training throughput (tokens/s) of the GPT under ZeRO stage 0 on 2 MPI
// ranks, for a ~10M- and a ~50M-parameter shape, on synthetic tokens. The same model, batch and
// sequence length as bench/pytorch_ddp_gpt.py, which bench/compare_train.sh runs beside it.
// `--stage 0,1,2,3` builds one engine per listed stage and runs them in turn, one step each, on
// the same batches: tokens/s and step-time ratios to the first listed stage, and a check that
// every stage's losses and final weights are the same bits.
#pragma once

#include <string>
#include <vector>

#include "cli/flags.h"

namespace zero::cli {

// args: the words after "bench train". Outside mpirun with --ranks > 1 it launches the MPI job
// itself (mpirun -np N, one OpenMP/OpenBLAS thread per rank on a machine with N cores).
int bench_train_main(const std::vector<std::string>& args);
std::vector<FlagSpec> bench_train_flags();

}  // namespace zero::cli
