#include "cli/commands.h"

#include "cli/bench_adam.h"
#include "cli/bench_comm.h"
#include "cli/bench_io.h"
#include "cli/bench_offload.h"
#include "cli/bench_train.h"
#include "cli/ckpt.h"
#include "cli/ckpt_import.h"
#include "cli/data_prepare.h"
#include "cli/demo.h"
#include "cli/estimate.h"
#include "cli/train.h"
#include "cli/use_model.h"

namespace zero::cli {
namespace {

std::vector<std::string> names(const std::vector<FlagSpec>& specs) {
  std::vector<std::string> out;
  for (const FlagSpec& s : specs) out.push_back(s.name);
  return out;
}

}  // namespace

std::vector<CommandFlags> command_flag_tables() {
  return {{{"train"}, names(train_flags())},
          {{"demo"}, names(demo_flags())},
          {{"estimate"}, names(estimate_flags())},
          {{"ckpt"}, {}},
          {{"ckpt", "inspect"}, names(ckpt_inspect_flags())},
          {{"ckpt", "export"}, names(ckpt_export_flags())},
          {{"ckpt", "import"}, names(ckpt_import_flags())},
          {{"data"}, {}},
          {{"data", "prepare"}, names(data_prepare_flags())},
          {{"generate"}, names(generate_flags())},
          {{"eval"}, names(eval_flags())},
          {{"bench"}, {}},
          {{"bench", "train"}, names(bench_train_flags())},
          {{"bench", "offload"}, names(bench_offload_flags())},
          {{"bench", "adam"}, bench_adam_flag_names()},
          {{"bench", "comm"}, names(bench_comm_flags())},
          {{"bench", "io"}, names(bench_io_flags())}};
}

}  // namespace zero::cli
