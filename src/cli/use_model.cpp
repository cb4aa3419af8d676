// `zero generate` and `zero eval`: the trained model, on one process, from any checkpoint
// whatever world size or stage wrote it.
#include "cli/use_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "checkpoint/export.h"
#include "checkpoint/hf_weights.h"
#include "checkpoint/loader.h"
#include "cli/flags.h"
#include "cli/init_from.h"
#include "config/init_from.h"
#include "common/output_file.h"
#include "data/batches.h"
#include "data/load.h"
#include "data/tokenizer.h"
#include "engine/engine.h"
#include "model/gpt.h"
#include "model/llama.h"
#include "partition/init.h"
#include "train/checkpointing.h"
#include "train/trainer.h"

namespace zero::cli {
namespace {

struct Opened {
  std::string dir;
  checkpoint::Manifest manifest;
  ModelSection model;  // the GPT or the LLaMA the manifest describes
  bool hugging_face = false;  // dir is an --init-from directory (step 0, its model from config.json), not a checkpoint
};

// A Hugging Face model directory, as a checkpoint at step 0 with nothing recorded but its model.
Opened open_hf_directory(const std::string& dir) {
  Opened o;
  o.dir = dir;
  o.hugging_face = true;
  o.manifest.info = nlohmann::json::object();
  o.model = model_section_from_json(hf_model_section(read_hf_config(dir)), dir + "/config.json");
  return o;
}

Opened open_checkpoint(const std::string& path) {
  if (path.empty()) throw ConfigError("[cli] --checkpoint DIR is required (a --save directory or one step-N directory)");
  Opened o;
  o.dir = checkpoint::find_checkpoint(path);
  o.manifest = checkpoint::read_manifest(o.dir + "/manifest.json");
  if (!o.manifest.info.contains("model")) throw CheckpointError(cat("[checkpoint] ", o.dir, "/manifest.json does not describe its model"));
  o.model = model_section_from_json(o.manifest.info["model"], o.dir + "/manifest.json");
  return o;
}

// --checkpoint DIR or --init-from DIR (a Hugging Face directory), one of them.
Opened open_model(const Flags& flags) {
  if (flags.has("init-from") && flags.has("checkpoint")) throw ConfigError("[cli] give --checkpoint or --init-from, not both");
  return flags.has("init-from") ? open_hf_directory(flags.get("init-from")) : open_checkpoint(flags.get("checkpoint"));
}

// Every parameter whole, in layout order, on this one process: a checkpoint's masters gathered
// from its rank files, or a Hugging Face directory's tensors converted to f32.
std::vector<float> whole_weights(const Opened& ck) {
  if (!ck.hugging_face) {
    checkpoint::ParameterReader reader(ck.dir, ck.manifest);
    return reader.read_all();
  }
  const std::vector<UnitSpec> units = ck.model.is_llama() ? ck.model.llama.units() : ck.model.shape.units();
  const FlatLayout layout(units, 1);
  checkpoint::HfWeights files(ck.dir, units, ck.model.is_llama());
  std::vector<float> all(layout.numel());
  std::size_t at = 0;
  for (int u = 0; u < layout.num_units(); ++u) {
    for (const ParamPlace& p : layout.unit(u).params) files.read(p, 0, p.numel, all.data() + at + p.offset);
    at += layout.unit(u).numel;
  }
  return all;
}

// The tokenizer to read and print text with (open_checkpoint_tokenizer).
std::unique_ptr<data::Tokenizer> open_model_tokenizer(const Flags& flags, const Opened& ck) {
  if (ck.hugging_face) {  // the directory's own, or a --tokenizer of the same files
    std::unique_ptr<data::Tokenizer> t = data::open_tokenizer(init_from_tokenizer(ck.dir, flags.has("tokenizer") ? flags.get("tokenizer") : "", "--tokenizer"));
    if (t->vocab_size() > static_cast<std::size_t>(ck.model.vocab_size())) {
      throw ConfigError(cat("[cli] the tokenizer ", t->describe(), " has ", t->vocab_size(), " tokens but ", ck.dir, "/config.json's vocab_size is ",
                            ck.model.vocab_size(), ": give --tokenizer the tokenizer the model was trained with"));
    }
    return t;
  }
  return open_checkpoint_tokenizer(ck.manifest, ck.dir + "/manifest.json", flags.has("tokenizer") ? std::optional(flags.get("tokenizer")) : std::nullopt,
                                   ck.model.vocab_size());
}

}  // namespace

std::unique_ptr<data::Tokenizer> open_checkpoint_tokenizer(const checkpoint::Manifest& manifest, const std::string& manifest_path,
                                                           const std::optional<std::string>& moved_to, int model_vocab) {
  const nlohmann::json recorded = manifest.info.value("/data/tokenizer"_json_pointer, nlohmann::json());
  const std::string spec = moved_to ? *moved_to : recorded.is_null() ? "" : recorded.value("spec", std::string());
  std::unique_ptr<data::Tokenizer> tokenizer;
  try {
    tokenizer = data::open_tokenizer(spec);
  } catch (const Error& e) {
    if (moved_to) throw;
    throw CheckpointError(cat("[checkpoint] ", manifest_path, " records the tokenizer ", spec, ", which cannot be read now (", e.what(),
                              "): give --tokenizer the files the checkpoint was trained with"));
  }
  check_same_tokenizer(recorded, tokenizer_record(spec, *tokenizer), manifest_path,
                       moved_to ? "give --tokenizer the files the checkpoint was trained with"
                                : "its files changed since; give --tokenizer the files it was trained with");
  if (tokenizer->vocab_size() > static_cast<std::size_t>(model_vocab)) {
    throw ConfigError(cat("[cli] the tokenizer ", tokenizer->describe(), " has ", tokenizer->vocab_size(), " tokens but the checkpoint's model has a "
                          "vocabulary of ", model_vocab, ": give --tokenizer the tokenizer the checkpoint was trained with"));
  }
  return tokenizer;
}

const char* const kTokenizerHelp = "where the checkpoint's tokenizer is now, if it moved (its files must have the SHA-256 recorded at "
                             "training): bytes, a GPT-2 vocab.json / encoder.json, a SentencePiece tokenizer.model, or a directory "
                             "holding one";

std::vector<FlagSpec> generate_flags() {
  return {{"checkpoint", "a --save directory (its latest) or one step-N directory", true, ""},
          {"init-from", "instead of --checkpoint: a Hugging Face model directory (GPT-2 or LLaMA; as zero train --init-from), "
                        "with its own tokenizer", true, ""},
          {"prompt", "the text to continue", true, ""},
          {"tokenizer", kTokenizerHelp, true, "the checkpoint's, recorded at training; bytes"},
          {"tokens", "how many tokens to generate (bytes with the byte tokenizer)", true, "200"},
          {"temperature", "sampling temperature; 0 picks the most likely token", true, "1"},
          {"top-k", "sample among the K most likely tokens only (0: all)", true, "0"},
          {"seed", "the sampling seed", true, "1"}};
}

int generate_main(const std::vector<std::string>& args) {
  Flags flags("zero generate", generate_flags(), args);
  if (flags.help()) {
    std::printf("Continues a prompt with a checkpoint's (or a Hugging Face directory's, --init-from) GPT or LLaMA (one sequence, keys and values cached).\n\n%s", flags.usage().c_str());
    return 0;
  }
  const int n = static_cast<int>(flags.get_int("tokens", 0, 1 << 24));
  const int top_k = static_cast<int>(flags.get_int("top-k", 0, 1 << 24));
  const auto seed = static_cast<std::uint64_t>(flags.get_int("seed", 0, 1LL << 62));
  double temperature = 0;
  try {
    temperature = std::stod(flags.get("temperature"));
  } catch (...) {
    temperature = -1;
  }
  if (!(temperature >= 0) || !std::isfinite(temperature)) {
    throw ConfigError(cat("[cli] --temperature must be a number >= 0, not '", flags.get("temperature"), "'"));
  }
  const Opened ck = open_model(flags);
  const std::unique_ptr<data::Tokenizer> tokenizer = open_model_tokenizer(flags, ck);
  const std::string prompt = flags.get("prompt");
  const std::vector<data::TokenId> tokens = tokenizer->encode(prompt);
  if (tokens.empty()) throw ConfigError("[cli] --prompt is empty: give some text to continue");
  const std::unique_ptr<Decoder> decoder = make_decoder(ck.model, whole_weights(ck));
  const auto t0 = std::chrono::steady_clock::now();
  const float* p = nullptr;
  for (data::TokenId t : tokens) p = decoder->feed(static_cast<int>(t));
  std::vector<data::TokenId> out;
  for (int i = 0; i < n; ++i) {
    const int tok = sample_token(p, ck.model.vocab_size(), temperature, top_k, counter_uniform(seed, static_cast<std::uint64_t>(i)));
    out.push_back(static_cast<data::TokenId>(tok));
    p = decoder->feed(tok);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // A token the model samples beyond the tokenizer's vocabulary (the model's may be larger) has no text.
  const std::size_t known = static_cast<std::size_t>(std::find_if(out.begin(), out.end(), [&](data::TokenId t) {
                              return t >= tokenizer->vocab_size(); }) - out.begin());
  if (known < out.size()) {
    std::fprintf(stderr, "zero generate: token %u (beyond the tokenizer's %zu) ends the text after %zu tokens\n", out[known],
                 tokenizer->vocab_size(), known);
    out.resize(known);
  }
  std::printf("%s%s\n", data::printable_text(prompt).c_str(), data::printable_text(tokenizer->decode(out)).c_str());
  std::fprintf(stderr, "zero generate: %d tokens in %.0f ms (%.0f tokens/s) from %s, step %lld\n", n, s * 1e3, n / std::max(s, 1e-9),
               ck.dir.c_str(), static_cast<long long>(ck.manifest.step));
  return 0;
}

std::vector<FlagSpec> eval_flags() {
  return {{"checkpoint", "a --save directory (its latest) or one step-N directory", true, ""},
          {"init-from", "instead of --checkpoint: a Hugging Face model directory (GPT-2 or LLaMA; as zero train --init-from), "
                        "its tokenizer used when it holds one; give --data", true, ""},
          {"data", "the file to evaluate (default: the file the checkpoint was trained on)", true, ""},
          {"tokenizer", kTokenizerHelp, true, "the checkpoint's, recorded at training; bytes"},
          {"split", "all (the whole file) or val (the held-out windows training evaluated)", true, "all"},
          {"batches", "evaluate at most this many micro-batches (0: all windows of the split)", true, "0"},
          {"json", "also write the result (loss, bits per byte, windows, step) as JSON to this file", true, ""}};
}

int eval_main(const std::vector<std::string>& args) {
  Flags flags("zero eval", eval_flags(), args);
  if (flags.help()) {
    std::printf("Prints a checkpoint's (or a Hugging Face directory's, --init-from) loss (and bits per byte for text) on a file, on one process.\n\n%s",
                flags.usage().c_str());
    return 0;
  }
  const std::string split_name = flags.get("split");
  if (split_name != "all" && split_name != "val") throw ConfigError(cat("[cli] --split must be all or val, not '", split_name, "'"));
  const long long batches = flags.get_int("batches", 0, 1LL << 40);
  const Opened ck = open_model(flags);
  if (ck.hugging_face && split_name != "all") throw ConfigError("[cli] --init-from has no held-out split: evaluate --split all of --data");
  const nlohmann::json& info = ck.manifest.info;
  // --split val of a run with a validation file of its own (data.val_path) reads that file whole.
  const std::string val_path = info.value("/data/val_path"_json_pointer, std::string());
  const bool val_file = split_name == "val" && !val_path.empty() && !flags.has("data");
  std::string path = flags.get("data");
  if (path.empty()) path = val_file ? val_path : info.value("/data/path"_json_pointer, std::string());
  if (path.empty()) throw ConfigError("[cli] the checkpoint does not name its data file: give --data FILE");
  const NamedPath json{"--json", flags.get("json")};
  if (flags.has("json")) check_output_path(json, {{"the data file", path}, {"--checkpoint", ck.dir}});  // before the evaluation
  const std::unique_ptr<data::Tokenizer> tokenizer = open_model_tokenizer(flags, ck);
  const bool by_bytes = tokenizer->files().empty();
  const data::TokenData tokens = by_bytes ? data::load_tokens(path) : data::tokenize_file(path, *tokenizer);
  const bool per_byte = by_bytes && tokens.format == "text";  // a token is a byte: the loss gives bits per byte
  const int T = ck.model.seq_len();
  const int B = info.value("/validation/micro_batch"_json_pointer, 8);
  data::TokenSpan text = tokens.tokens;
  int windows = 0;  // all
  if (split_name == "val") {
    text = val_file ? tokens.tokens : data::split_tokens(tokens, info.value("/data/val_fraction"_json_pointer, 0.05), T).validation;
    if (text.empty()) throw ConfigError(cat("[cli] the checkpoint's run held out no validation split (val_fraction 0)"));
    windows = info.value("/validation/windows"_json_pointer, 0);
  }
  const std::string what = split_name == "val" && !val_file ? cat(path, "'s validation split") : path;
  if (text.size() < static_cast<std::size_t>(T) + 1) {
    throw ConfigError(cat("[cli] ", what, " has ", text.size(), " tokens, fewer than one window of the checkpoint's seq_len ", T,
                          " (", T + 1, " tokens with its target): give a longer file"));
  }
  const int largest = text.max_token();
  if (largest >= ck.model.vocab_size()) {
    throw ConfigError(cat("[cli] ", what, " holds token ", largest, ", outside the checkpoint's vocabulary of ", ck.model.vocab_size(),
                          ": evaluate data tokenized as the checkpoint's training data was"));
  }
  if (batches > 0) windows = static_cast<int>(std::min<long long>(batches * B, windows > 0 ? windows : 1LL << 30));
  data::ValidationWindows win(text, T, windows);
  if (win.count() < 1) throw ConfigError(cat("[cli] ", path, " holds no window of ", T, " tokens: give a longer file"));

  Ledger ledger;
  auto comm = make_communicator("self");
  std::unique_ptr<LanguageModel> model;
  if (ck.model.is_llama()) {
    model = std::make_unique<Llama>(ck.model.llama, B, ledger);
  } else {
    model = std::make_unique<Gpt>(ck.model.shape, B, ledger);
  }
  EngineConfig config;
  Engine engine(config, *model, *comm, ledger);
  if (ck.hugging_face) {
    checkpoint::import_hf_weights(engine, ck.dir, ck.model.is_llama(), *comm);
  } else {
    checkpoint::load_checkpoint(engine, ck.dir, ck.manifest, *comm);
  }
  const float loss = validation_loss(win, *model, engine, *comm);
  if (!std::isfinite(loss)) {  // a user's script must not read "loss nan" with exit 0 as a result
    throw TrainingError(cat("[cli] the loss of the checkpoint ", ck.dir, " (step ", ck.manifest.step, ") on ", what, " is ", loss,
                            ": its weights diverged. Evaluate an earlier checkpoint of the run"));
  }
  std::printf("loss %.4f on %s (%s, %d windows of %d tokens) at step %lld", loss, path.c_str(), split_name.c_str(),
              win.count(), T, static_cast<long long>(ck.manifest.step));
  if (per_byte) std::printf("; %.4f bits per byte", loss / std::log(2.0));
  std::printf("\n");
  if (flags.has("json")) {
    const nlohmann::json j = {{"checkpoint", ck.dir}, {"step", ck.manifest.step}, {"data", path}, {"split", split_name},
                              {"windows", win.count()}, {"seq_len", T}, {"loss", loss},
                              {"bits_per_byte", per_byte ? nlohmann::json(loss / std::log(2.0)) : nlohmann::json()}};
    write_output_file(json, j.dump(2) + "\n", {{"the data file", path}});
  }
  return 0;
}

}  // namespace zero::cli
