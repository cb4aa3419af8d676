// `zero ckpt export DIR --out model.safetensors`: the weights as one safetensors file.
// `zero ckpt export DIR --out OUTDIR`: a Hugging Face model directory that transformers'
// from_pretrained loads unchanged: config.json, generation_config.json, the weights (sharded past
// --max-shard-size, with their index) and the tokenizer's files (checkpoint/hf_export.h).
#include <chrono>
#include <cstdio>

#include "checkpoint/hf_export.h"
#include "checkpoint/loader.h"
#include "cli/ckpt.h"
#include "cli/use_model.h"
#include "common/sha256.h"
#include "common/input_file.h"
#include "memory/ledger.h"
#include "model/hf_config.h"
#include "planner/byte_size.h"
#include "train/checkpointing.h"

namespace zero::cli {
namespace {

using checkpoint::HfFile;

std::string json_file(const nlohmann::json& j) { return j.dump(2) + "\n"; }

// The tokenizer's files under the names transformers reads them by, each copied byte for byte
// after its SHA-256 is checked against the one the manifest records (the bytes copied are the
// bytes checked), and tokenizer_config.json and special_tokens_map.json beside them.
std::vector<HfFile> tokenizer_files(const data::Tokenizer& tokenizer, const nlohmann::json& recorded, const std::string& manifest_path,
                                    int model_max_length) {
  const data::HfTokenizer hf = tokenizer.hugging_face();
  const std::vector<std::string> paths = tokenizer.files();
  std::vector<HfFile> files;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    std::string bytes = read_input_file({paths[i], "checkpoint", "tokenizer file", std::uint64_t{1} << 30});
    const std::string want = recorded.value("files", nlohmann::json::array()).at(i).value("sha256", std::string());
    if (sha256_hex(bytes.data(), bytes.size()) != want) {
      throw CheckpointError(cat("[checkpoint] the tokenizer file ", paths[i], " is not the one ", manifest_path, " records (sha256 ", want,
                                "): it changed while it was read; give --tokenizer the files the checkpoint was trained with"));
    }
    files.push_back({hf.names.at(i), std::move(bytes)});
  }
  nlohmann::json config = nlohmann::json::parse(hf.options_json);
  nlohmann::json special = nlohmann::json::object();
  for (const auto& [key, token] : {std::pair{"bos_token", hf.bos}, {"eos_token", hf.eos}, {"unk_token", hf.unk}}) {
    if (token) special[key] = config[key] = token->text;
  }
  config["tokenizer_class"] = hf.tokenizer_class;
  config["model_max_length"] = model_max_length;
  config["clean_up_tokenization_spaces"] = false;  // zero's decode gives the bytes back as they were: " ," stays " ,"
  files.push_back({"tokenizer_config.json", json_file(config)});
  files.push_back({"special_tokens_map.json", json_file(special)});
  return files;
}

struct Written {
  checkpoint::HfDirectoryStats stats;
  std::string tokenizer;  // what the summary says of it
};

Written export_directory(checkpoint::ParameterReader& reader, const Flags& flags, const std::string& out, bool bf16,
                         std::uint64_t max_shard) {
  const std::string manifest_path = reader.dir() + "/manifest.json";
  const nlohmann::json& info = reader.manifest().info;
  if (!info.contains("model")) throw CheckpointError(cat("[checkpoint] ", manifest_path, " does not describe its model"));
  const ModelSection model = model_section_from_json(info["model"], manifest_path);
  checkpoint::check_hf_directory(out);  // before the tokenizer's files are read
  const std::unique_ptr<data::Tokenizer> tokenizer = open_checkpoint_tokenizer(
      reader.manifest(), manifest_path, flags.has("tokenizer") ? std::optional(flags.get("tokenizer")) : std::nullopt, model.vocab_size());
  const data::HfTokenizer hf = tokenizer->hugging_face();
  HfConfigExtras extras{bf16, std::nullopt, std::nullopt};
  if (hf.bos) extras.bos = static_cast<int>(hf.bos->id);
  if (hf.eos) extras.eos = static_cast<int>(hf.eos->id);
  std::vector<HfFile> files = {{"config.json", json_file(model.is_llama() ? hf_config(model.llama, extras) : hf_config(model.shape, extras))},
                               {"generation_config.json", json_file(hf_generation_config(extras))}};
  Written w;
  if (tokenizer->files().empty()) {
    // A run on .bin tokens without --tokenizer records bytes too: its tokenizer is not known.
    w.tokenizer = "no tokenizer files: the checkpoint records none (a run on bytes, for which transformers has no tokenizer class, "
                  "or on .bin tokens without --tokenizer)";
  } else {
    const nlohmann::json recorded = info.value("/data/tokenizer"_json_pointer, nlohmann::json());
    for (HfFile& f : tokenizer_files(*tokenizer, recorded, manifest_path, model.seq_len())) files.push_back(std::move(f));
    w.tokenizer = cat("tokenizer ", tokenizer->describe(), " as transformers' ", hf.tokenizer_class);
  }
  w.stats = checkpoint::export_hf_directory(reader, out, bf16, max_shard, files);
  return w;
}

}  // namespace

int ckpt_export_main(std::vector<std::string> args) {
  std::string dir = checkpoint_arg(args, "zero ckpt export");
  Flags flags("zero ckpt export", ckpt_export_flags(), args);
  if (flags.help()) {
    std::printf("Writes a checkpoint's model with Hugging Face names (GPT-2's, or LLaMA's): a directory that transformers'\n"
                "from_pretrained loads (config, weights, tokenizer), or the weights alone as one safetensors file.\n\n"
                "usage: zero ckpt export DIR --out OUTDIR       a new or empty directory\n"
                "       zero ckpt export DIR --out FILE.safetensors\n\n%s",
                flags.usage().c_str());
    return 0;
  }
  const std::string out = flags.get("out"), dtype = flags.get("dtype");
  if (out.empty()) throw ConfigError("[cli] zero ckpt export needs --out: a new directory (Hugging Face's files) or FILE.safetensors");
  if (dtype != "fp32" && dtype != "bf16") throw ConfigError(cat("[cli] --dtype must be fp32 or bf16, not '", dtype, "'"));
  const bool one_file = out.ends_with(".safetensors");
  for (const char* flag : {"max-shard-size", "tokenizer"}) {
    if (one_file && flags.has(flag)) {
      throw ConfigError(cat("[cli] --", flag, " is for a directory --out; ", out, " ends in .safetensors: the weights alone, in one file"));
    }
  }
  const std::uint64_t max_shard = parse_byte_size(flags.get("max-shard-size"), "--max-shard-size");
  dir = checkpoint::find_checkpoint(dir);
  checkpoint::ParameterReader reader(dir, checkpoint::read_manifest(dir + "/manifest.json"));
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t model = 0;
  for (const auto& u : reader.manifest().units) model += u.numel * 4;
  const auto millis = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3; };
  if (one_file) {
    const checkpoint::ExportStats s = checkpoint::export_safetensors(reader, out, dtype == "bf16");
    std::printf("wrote %s: %d tensors, %s (%s) in %.0f ms; largest tensor %s (f32), model %s (f32); peak resident memory %s\n",
                out.c_str(), s.tensors, format_bytes(s.file_bytes).c_str(), dtype.c_str(), millis(),
                format_bytes(s.largest_tensor_bytes).c_str(), format_bytes(model).c_str(), format_bytes(peak_rss_bytes()).c_str());
    return 0;
  }
  const Written w = export_directory(reader, flags, out, dtype == "bf16", max_shard);
  std::uint64_t bytes = 0;
  for (const auto& [name, size] : w.stats.files) bytes += size;
  std::printf("wrote %s: %zu files, %s (%s) in %.0f ms: %d tensors in %d shard%s of at most %s; model %s (f32); peak resident memory %s\n",
              out.c_str(), w.stats.files.size(), format_bytes(bytes).c_str(), dtype.c_str(), millis(), w.stats.tensors, w.stats.shards,
              w.stats.shards == 1 ? "" : "s", flags.get("max-shard-size").c_str(), format_bytes(model).c_str(), format_bytes(peak_rss_bytes()).c_str());
  for (const auto& [name, size] : w.stats.files) std::printf("  %-36s %s\n", name.c_str(), format_bytes(size).c_str());
  std::printf("%s\n", w.tokenizer.c_str());
  return 0;
}

std::vector<FlagSpec> ckpt_export_flags() {
  return {{"checkpoint", "the checkpoint (instead of DIR): a --save directory (its latest) or one step-N directory", true, ""},
          {"out", "a path ending in .safetensors: the weights alone, one file; any other: a Hugging Face directory, which must "
                  "not exist yet or be empty (its parent must exist)", true, ""},
          {"dtype", "fp32 or bf16 (rounded to nearest even)", true, "fp32"},
          {"max-shard-size", "a directory's weights in shards of at most this many bytes (a larger tensor alone in its shard): "
                             "bytes, or KB/MB/GB (powers of 10, as transformers reads them) or KiB/MiB/GiB", true, "5GB"},
          {"tokenizer", kTokenizerHelp, true, "the checkpoint's, recorded at training"}};
}

}  // namespace zero::cli
