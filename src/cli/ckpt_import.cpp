// `zero ckpt import DIR --out SAVE`: the weights of a Hugging Face model directory (GPT-2 or
// LLaMA), read as zero train --init-from reads them, saved as a checkpoint at step 0 (one rank,
// Adam's moments zero). zero eval, zero generate and zero ckpt export then read it as any
// checkpoint; export gives the directory's tensors back bit for bit (f32 export of F32 weights).
#include "cli/ckpt_import.h"

#include <cstdio>

#include "checkpoint/hf_weights.h"
#include "checkpoint/saver.h"
#include "cli/init_from.h"
#include "common/error.h"
#include "config/init_from.h"
#include "data/tokenizer.h"
#include "engine/engine.h"
#include "model/gpt.h"
#include "model/llama.h"
#include "train/checkpointing.h"

namespace zero::cli {

std::vector<FlagSpec> ckpt_import_flags() {
  return {{"out", "the save directory to write the checkpoint into (SAVE/step-00000000, SAVE/latest); it must hold no checkpoints", true, ""}};
}

int ckpt_import_main(std::vector<std::string> args) {
  std::string dir;
  if (!args.empty() && args[0].rfind("--", 0) != 0) {
    dir = args[0];
    args.erase(args.begin());
  }
  Flags flags("zero ckpt import", ckpt_import_flags(), args);
  if (flags.help()) {
    std::printf("Saves a Hugging Face model directory's weights (GPT-2 or LLaMA) as a zero checkpoint at step 0.\n\n"
                "usage: zero ckpt import DIR --out SAVE\n\n%s", flags.usage().c_str());
    return 0;
  }
  if (dir.empty()) throw ConfigError("[cli] zero ckpt import needs a Hugging Face model directory: zero ckpt import DIR --out SAVE");
  if (flags.get("out").empty()) throw ConfigError("[cli] zero ckpt import needs --out SAVE (a new save directory)");
  const ModelSection model = model_section_from_json(hf_model_section(read_hf_config(dir)), dir + "/config.json");
  Ledger ledger;
  auto comm = make_communicator("self");
  std::unique_ptr<LanguageModel> net;
  if (model.is_llama()) {
    net = std::make_unique<Llama>(model.llama, 1, ledger);
  } else {
    net = std::make_unique<Gpt>(model.shape, 1, ledger);
  }
  const EngineConfig defaults;  // named: GCC 12 warns (falsely) of a temporary's uninitialised strings
  Engine engine(defaults, *net, *comm, ledger);
  const checkpoint::HfImportStats s = checkpoint::import_hf_weights(engine, dir, model.is_llama(), *comm);
  const std::string tokenizer = init_from_tokenizer(dir, "", "");
  const nlohmann::json info = {{"model", model_json(model)}, {"init_from", dir}, {"stage", 0},
                               {"data", {{"tokenizer", tokenizer.empty() ? nlohmann::json() : tokenizer_record(tokenizer, *data::open_tokenizer(tokenizer))}}}};
  checkpoint::SaveOptions options;
  options.dir = flags.get("out");
  checkpoint::Saver saver(options, *comm);
  saver.save(engine, 0, info);
  const std::optional<checkpoint::Published> p = saver.poll(true);
  std::printf("imported %s (%s): %s of weights read in %.0f ms; wrote %s\n", dir.c_str(), model.describe().c_str(),
              format_bytes(s.bytes_read).c_str(), s.seconds * 1e3, p ? p->dir.c_str() : options.dir.c_str());
  return 0;
}

}  // namespace zero::cli
