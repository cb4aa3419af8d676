// `zero ckpt inspect DIR`, and the verbs' dispatch (export: cli/ckpt_export.cpp).
#include "cli/ckpt.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "checkpoint/export.h"
#include "checkpoint/loader.h"
#include "cli/flags.h"
#include "memory/ledger.h"
#include "train/checkpointing.h"

namespace zero::cli {

std::string checkpoint_arg(std::vector<std::string>& args, const std::string& command) {
  std::string dir;
  if (!args.empty() && args[0].rfind("--", 0) != 0) {
    dir = args[0];
    args.erase(args.begin());
  }
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--checkpoint") {
      dir = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      break;
    }
  }
  const bool help = std::find(args.begin(), args.end(), "--help") != args.end();
  if (dir.empty() && !help) throw ConfigError(cat("[cli] ", command, " needs a checkpoint: ", command, " DIR (a --save directory or one step-N directory)"));
  return dir;
}

std::uint64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::uint64_t>(u.ru_maxrss) * 1024;
}

namespace {

int inspect(std::vector<std::string> args) {
  std::string dir = checkpoint_arg(args, "zero ckpt inspect");
  Flags flags("zero ckpt inspect", ckpt_inspect_flags(), args);
  if (flags.help()) {
    std::printf("Prints a checkpoint's manifest in human terms and verifies every checksum.\n\nusage: zero ckpt inspect DIR\n\n%s",
                flags.usage().c_str());
    return 0;
  }
  dir = checkpoint::find_checkpoint(dir);
  const checkpoint::Manifest m = checkpoint::read_manifest(dir + "/manifest.json");
  const nlohmann::json& info = m.info;
  std::size_t numel = 0;
  for (const auto& u : m.units) numel += u.numel;
  std::printf("checkpoint %s (%s version %d)\n", dir.c_str(), checkpoint::kFormatName, m.version);
  const std::string model = info.contains("model") ? model_section_from_json(info["model"], dir).describe() : "(not described)";
  std::printf("model: %s, %zu parameters in %zu units\n", model.c_str(), numel, m.units.size());
  std::printf("step %lld, loss %.4f, next learning rate %.3e\n", static_cast<long long>(m.step), info.value("loss", -1.0),
              info.value("lr_next", -1.0));
  std::printf("written by %d ranks at ZeRO stage %s, offload %s; precision %s\n", m.world_size,
              info.value("stage", nlohmann::json()).dump().c_str(), info.value("offload", nlohmann::json()).dump().c_str(),
              info.value("precision", nlohmann::json()).dump().c_str());
  std::printf("optimizer: %s\n", info.value("optimizer", nlohmann::json()).dump().c_str());
  if (!m.loss_scaler.is_null()) {
    std::printf("fp16 loss scaler: %s; %lld steps skipped\n", m.loss_scaler.dump().c_str(), static_cast<long long>(m.skipped_steps));
  }
  std::printf("data: %s\n", info.value("data", nlohmann::json()).dump().c_str());
  std::printf("per element: %zu f32 tensors (", m.tensors.size());
  for (std::size_t t = 0; t < m.tensors.size(); ++t) std::printf("%s%s", t ? ", " : "", m.tensors[t].c_str());
  std::printf(")\n");
  for (int r = 0; r < m.world_size; ++r) {
    std::printf("  rank %d: %s, %s, crc32 %08x, %zu blocks of %s\n", r, m.files[r].name.c_str(), format_bytes(m.files[r].bytes).c_str(),
                m.files[r].crc32, m.files[r].block_crc32.size(), format_bytes(m.block_bytes).c_str());
  }
  checkpoint::ParameterReader reader(dir, m);
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t bytes = reader.verify_all();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("checksums: verified, all %d files (%s read in %.0f ms)\n", m.world_size, format_bytes(bytes).c_str(), s * 1e3);
  return 0;
}

}  // namespace

// `--checkpoint DIR` is taken out of the words before the table parses them (checkpoint_arg), so
// that DIR may also come first; it is in the table for --help.
std::vector<FlagSpec> ckpt_inspect_flags() {
  return {{"checkpoint", "the checkpoint (instead of DIR): a --save directory (its latest) or one step-N directory", true, ""}};
}

int ckpt_main(const std::vector<std::string>& args) {
  const std::string verb = args.empty() ? "" : args[0];
  std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (verb == "--help" || verb == "-h") {
    std::printf("usage: zero ckpt inspect DIR              a checkpoint's manifest in human terms, every checksum verified\n"
                "       zero ckpt export DIR --out OUTDIR  a Hugging Face directory: config, weights (sharded), tokenizer\n"
                "       zero ckpt export DIR --out FILE.safetensors   the weights alone, one file (--dtype fp32|bf16)\n"
                "\nDIR: a --save directory (its latest) or one step-N directory. zero ckpt VERB --help for a verb's flags.\n");
    return 0;
  }
  if (verb == "inspect") return inspect(rest);
  if (verb == "export") return ckpt_export_main(rest);
  throw ConfigError(cat("[cli] zero ckpt needs a verb: inspect DIR, or export DIR --out OUTDIR", verb.empty() ? "" : cat(" (not '", verb, "')")));
}

}  // namespace zero::cli
