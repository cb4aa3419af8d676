// `zero bench offload --device nvme`: the step with the optimizer state in host memory (host
// offload) against the same step with it on the NVMe tier (and, with --zenflow, ZenFlow's on
// each), runs alternated so that drift in the machine (page cache, other load) falls on all
// alike; the disk bytes the engine counted each step and the bandwidth they imply.
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli/bench_offload.h"
#include "cli/launch.h"
#include "common/error.h"
#include "common/output_file.h"
#include "data/load.h"
#include "io/async_file.h"
#include "io/swap_folder.h"
#include "memory/ledger.h"
#include "train/trainer.h"

namespace zero::cli {
namespace {

// A folder of our own under /tmp for the swap files when --nvme-path is not given; removed
// (with anything a failed run left in it) when the bench ends.
class TempFolder {
 public:
  TempFolder() {
    // mkdtemp's template: a new folder of a unique name (TMPDIR's, or /tmp)
    std::string name = (std::filesystem::temp_directory_path() / "zero-bench-nvme-XXXXXX").string();
    if (!::mkdtemp(name.data())) {
      throw io::IoError(cat("[bench] cannot make a folder for the swap files (", name, "): name one with --nvme-path"));
    }
    path_ = name;
  }
  ~TempFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Tier {
  const char* name = "";
  bool nvme = false, zenflow = false;
  double seconds = 0;        // mean step over the rounds
  double tokens_per_second = 0;
  std::uint64_t read = 0, written = 0;  // all ranks' disk bytes in the last step
  std::string sha256;
};

void add_run(Tier& t, const TrainResult& r, int rounds) {
  t.seconds += r.mean_step_seconds / rounds;
  t.tokens_per_second += r.tokens_per_second / rounds;
  t.read = t.written = 0;
  for (const RankFigures& f : r.final_ranks) t.read += f.disk_read, t.written += f.disk_written;
  t.sha256 = r.weights_sha256;
}

void print(const std::vector<Tier>& tiers, const std::string& json_path) {
  const Tier &host = tiers[0], &nvme = tiers[1];
  std::printf("%-16s %10s %12s %16s %16s %12s\n", "optimizer state", "ms/step", "tokens/s", "disk read/step", "disk written/step",
              "disk GB/s");
  for (const Tier& t : tiers) {
    const bool disk = t.read + t.written > 0;
    char gbs[32] = "-";
    if (disk) std::snprintf(gbs, sizeof gbs, "%.3f", static_cast<double>(t.read + t.written) / t.seconds / 1e9);
    std::printf("%-16s %10.2f %12.0f %16s %17s %12s\n", t.name, t.seconds * 1e3, t.tokens_per_second,
                disk ? format_bytes(t.read).c_str() : "-", disk ? format_bytes(t.written).c_str() : "-", gbs);
  }
  std::printf("\nnvme / host step time: %.2fx; the disk bandwidth: all ranks' swap-file bytes a step over the whole step\n"
              "(a lower bound on what the disk gives: the step also computes)\n", nvme.seconds / host.seconds);
  std::printf("the NVMe tier's weights equal host offload's: %s\n", nvme.sha256 == host.sha256 ? "yes (same weights sha256)" : "NO");
  if (tiers.size() == 4) {
    std::printf("ZenFlow: nvme / host step time: %.2fx; its weights on the NVMe tier equal host ZenFlow's: %s\n",
                tiers[3].seconds / tiers[2].seconds, tiers[3].sha256 == tiers[2].sha256 ? "yes (same weights sha256)" : "NO");
  }
  if (json_path.empty()) return;
  nlohmann::json out = nlohmann::json::array();
  for (const Tier& t : tiers) {
    out.push_back({{"optimizer_state", t.name}, {"step_seconds", t.seconds}, {"tokens_per_second", t.tokens_per_second},
                   {"disk_read_bytes_per_step", t.read}, {"disk_written_bytes_per_step", t.written}});
  }
  write_output_file({"--json", json_path}, out.dump(2) + "\n");
}

}  // namespace

int bench_offload_nvme(const Flags& flags) {
  const int rounds = static_cast<int>(flags.get_int("rounds", 1, 1000));
  check_output_paths({{"--json", flags.get("json")}}, {{"the data file", data::default_text_path()}});
  std::optional<TempFolder> temp;
  if (!flags.has("nvme-path")) temp.emplace();
  const std::string dir = temp ? temp->path() : flags.get("nvme-path");
  io::check_nvme_path(dir);  // before any rank starts
  return run_ranks(flags, [&](Communicator& comm, Ledger& ledger) {
    const nlohmann::json base = bench_offload_config(flags);
    std::vector<Tier> tiers(flags.has("zenflow") ? 4 : 2);
    const char* names[] = {"host", "nvme", "host + ZenFlow", "nvme + ZenFlow"};
    for (std::size_t i = 0; i < tiers.size(); ++i) tiers[i].name = names[i], tiers[i].nvme = i % 2 == 1, tiers[i].zenflow = i >= 2;
    for (int round = 0; round < rounds; ++round) {
      for (Tier& t : tiers) {
        nlohmann::json j = base;
        j["zero_optimization"]["offload_optimizer"] = {{"device", t.nvme ? "nvme" : "cpu"}};
        if (t.nvme) j["zero_optimization"]["offload_optimizer"]["nvme_path"] = dir;
        if (t.zenflow) j["zero_optimization"]["zenflow"] = bench_zenflow_section();
        TrainOptions o;
        o.config = parse_config(j, comm.size());
        o.data_path = data::default_text_path();
        o.ledger = &ledger;
        add_run(t, train(o, comm), rounds);
      }
    }
    if (comm.rank() != 0) return 0;
    std::printf("\nzero bench offload --device nvme: GPT %s, stage %lld, %d ranks (%s), %lld steps a run, %d %s of each alternated;"
                "\nswap files in %s\n\n",
                parse_config(base, comm.size()).model.shape.describe().c_str(), flags.get_int("stage", 1, 3), comm.size(),
                comm.backend().c_str(), flags.get_int("steps", 2, 100000), rounds, rounds == 1 ? "run" : "runs", dir.c_str());
    print(tiers, flags.get("json"));
    return 0;
  });
}

}  // namespace zero::cli
