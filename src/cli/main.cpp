// zero: the command-line tool. Thin: parse, build, run.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli/bench_adam.h"
#include "cli/bench_comm.h"
#include "cli/bench_io.h"
#include "cli/bench_train.h"
#include "cli/ckpt.h"
#include "cli/data_prepare.h"
#include "cli/demo.h"
#include "cli/estimate.h"
#include "cli/bench_offload.h"
#include "cli/train.h"
#include "cli/use_model.h"
#include "backends/cpu/blas_core.h"
#include "common/error.h"

namespace {

const std::string kBenchUsage =
    "  bench offload  step time with and without ZeRO-Offload and the delayed update\n"
    "  bench adam     speed of the CPU Adam kernel against the memory-bandwidth ceiling\n"
    "  bench train    training tokens/s of a 10M and a 50M GPT, stage 0 on 2 ranks (vs PyTorch: bench/compare_train.sh)\n"
    "  bench comm     all-reduce bandwidth of zero's communicator, per size (vs MPI_Allreduce: bench/comm_link.sh)\n"
    "  bench io       read and write bandwidth of the NVMe tier's I/O on a folder, beside fio's\n";

const std::string kUsage =
    "usage: zero COMMAND [flags]\n"
    "\n"
    "commands:\n"
    "  train          train a GPT on text with a DeepSpeed-style config (zero train --help)\n"
    "  demo           train one GPT under ZeRO stages 0-3 and offload; measured memory and traffic per rank\n"
    "  estimate       which ZeRO stage (and offload) fits: per-rank memory and traffic, and a recommendation\n"
    "  ckpt           inspect DIR: a checkpoint's manifest, checksums verified; export DIR --out F: safetensors (GPT-2 names)\n"
    "  generate       continue a prompt with a checkpoint's GPT (--checkpoint DIR --prompt TEXT; keys and values cached)\n"
    "  data           prepare FILE... --out DIR: text, .gz and JSONL tokenized into llm.c .bin shards\n"
    "  eval           a checkpoint's loss and bits per byte on a file (--checkpoint DIR --data FILE [--split val])\n" +
    kBenchUsage +
    "\n"
    "Run `zero COMMAND --help` for a command's flags. Multi-process: mpirun -np N zero COMMAND ...\n";

// Where OpenBLAS fell back to its SSE3 kernels on a CPU it does not know (backends/cpu/blas_core.h),
// zero starts itself again, the same process with the same arguments, with the kernels the CPU has.
// Only if that fails does it go on with the slow ones, saying so.
void choose_blas_kernels(char** argv) {
  const std::string core = zero::blas_core_to_choose();
  if (core.empty()) return;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "zero: note: OpenBLAS chose its slow Prescott kernels on this CPU and restarting with "
                       "OPENBLAS_CORETYPE=%s failed (%s); set OPENBLAS_CORETYPE=%s yourself\n",
               core.c_str(), std::strerror(errno), core.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  choose_blas_kernels(argv);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::printf("%s", kUsage.c_str());
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  try {
    if (command == "train") return zero::cli::train_main({args.begin() + 1, args.end()});
    if (command == "demo") return zero::cli::demo_main({args.begin() + 1, args.end()});
    if (command == "generate") return zero::cli::generate_main({args.begin() + 1, args.end()});
    if (command == "eval") return zero::cli::eval_main({args.begin() + 1, args.end()});
    if (command == "data") return zero::cli::data_main({args.begin() + 1, args.end()});
    if (command == "ckpt") return zero::cli::ckpt_main({args.begin() + 1, args.end()});
    if (command == "estimate") return zero::cli::estimate_main({args.begin() + 1, args.end()});
    if (command == "bench" && args.size() >= 2 && args[1] == "train") return zero::cli::bench_train_main({args.begin() + 2, args.end()});
    if (command == "bench" && args.size() >= 2 && args[1] == "offload") return zero::cli::bench_offload_main({args.begin() + 2, args.end()});
    if (command == "bench" && args.size() >= 2 && args[1] == "comm") return zero::cli::bench_comm_main({args.begin() + 2, args.end()});
    if (command == "bench" && args.size() >= 2 && args[1] == "io") return zero::cli::bench_io_main({args.begin() + 2, args.end()});
    if (command == "bench" && args.size() >= 2 && args[1] == "adam") return zero::bench_adam_main(argc - 3, argv + 3);
    if (command == "bench" && args.size() >= 2 && (args[1] == "--help" || args[1] == "-h")) {
      std::printf("usage: zero bench train|offload|adam|comm|io [flags]\n\n%s\nzero bench NAME --help for a benchmark's flags.\n",
                  kBenchUsage.c_str());
      return 0;
    }
    if (command == "bench") {
      const std::string what = args.size() >= 2 ? "has no benchmark '" + args[1] + "'" : "needs a benchmark";
      std::fprintf(stderr, "zero: bench %s: use zero bench train, zero bench offload, zero bench adam, zero bench comm or zero bench io\n", what.c_str());
      return 2;
    }
    std::fprintf(stderr, "zero: unknown command '%s'\n\n%s", command.c_str(), kUsage.c_str());
    return 2;
  } catch (const zero::Error& e) {
    std::fprintf(stderr, "zero: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zero: internal error: %s\n", e.what());
    return 3;
  }
}
