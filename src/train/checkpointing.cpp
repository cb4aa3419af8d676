#include "train/checkpointing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <utility>

#include "common/input_file.h"
#include "common/sha256.h"
#include "data/tokenizer.h"
#include "memory/ledger.h"

#include "checkpoint/loader.h"

namespace zero {
namespace {

const char* schedule_name(ScheduleType t) {
  switch (t) {
    case ScheduleType::warmup: return "WarmupLR";
    case ScheduleType::warmup_decay: return "WarmupDecayLR";
    case ScheduleType::warmup_cosine: return "WarmupCosineLR";
    default: return "none";
  }
}

nlohmann::json schedule_json(const Schedule& s) {
  nlohmann::json j = {{"type", schedule_name(s.type)}, {"warmup_type", s.warmup_type == WarmupType::log ? "log" : "linear"},
                      {"warmup_num_steps", s.warmup_num_steps}, {"total_num_steps", s.total_num_steps},
                      {"warmup_min_lr", s.warmup_min_lr}, {"warmup_min_ratio", s.warmup_min_ratio}, {"cos_min_ratio", s.cos_min_ratio}};
  if (s.warmup_max_lr) j["warmup_max_lr"] = *s.warmup_max_lr;
  return j;
}

}  // namespace

nlohmann::json model_json(const GptShape& s) {
  return {{"type", "gpt"}, {"vocab_size", s.vocab_size}, {"n_ctx", s.seq_len}, {"n_embd", s.channels},
          {"n_layer", s.layers}, {"n_head", s.heads}};
}

// A LLaMA with every field of Hugging Face's LlamaConfig that shapes it, by its name there.
nlohmann::json model_json(const LlamaShape& s) {
  return {{"type", "llama"}, {"vocab_size", s.vocab_size}, {"max_position_embeddings", s.seq_len}, {"hidden_size", s.hidden},
          {"intermediate_size", s.intermediate}, {"num_hidden_layers", s.layers}, {"num_attention_heads", s.heads},
          {"num_key_value_heads", s.kv_heads}, {"rms_norm_eps", s.rms_norm_eps}, {"rope_theta", s.rope_theta},
          {"tie_word_embeddings", s.tie_word_embeddings}};
}

nlohmann::json model_json(const ModelSection& m) { return m.is_llama() ? model_json(m.llama) : model_json(m.shape); }

ModelSection model_section_from_json(const nlohmann::json& m, const std::string& where) {
  const auto bad = [&](const std::string& what) {
    return CheckpointError(cat("[checkpoint] ", where, " does not describe its model (", what, "): it was not written by zero train"));
  };
  if (!m.is_object()) throw bad("no model object");
  // A manifest without a type is a GPT's (zero wrote only GPTs then).
  const nlohmann::json type = m.value("type", nlohmann::json("gpt"));
  if (type != "gpt" && type != "llama") {
    throw CheckpointError(cat("[checkpoint] ", where, " holds a ", type.dump().substr(0, 100), " model; zero reads \"gpt\" and \"llama\""));
  }
  // Exact integers in [1, 2^30]; the shape then passes the model's own check.
  const auto dim = [&](const char* key) {
    if (!m.contains(key) || !m[key].is_number_integer() || m[key].get<std::int64_t>() < 1 || m[key].get<std::int64_t>() > (1 << 30)) {
      throw bad(cat(key, " is ", m.contains(key) ? m[key].dump().substr(0, 100) : std::string("missing"), ", not a positive integer"));
    }
    return static_cast<int>(m[key].get<std::int64_t>());
  };
  const auto real = [&](const char* key) {
    if (!m.contains(key) || !m[key].is_number() || !std::isfinite(m[key].get<double>())) {
      throw bad(cat(key, " is ", m.contains(key) ? m[key].dump().substr(0, 100) : std::string("missing"), ", not a number"));
    }
    return m[key].get<double>();
  };
  const auto dims = [&](std::initializer_list<std::pair<const char*, int*>> fields) {
    for (const auto& [key, to] : fields) *to = dim(key);
  };
  ModelSection s;
  s.type = type.get<std::string>();
  if (s.is_llama()) {
    LlamaShape& l = s.llama;
    dims({{"vocab_size", &l.vocab_size}, {"max_position_embeddings", &l.seq_len}, {"hidden_size", &l.hidden},
          {"intermediate_size", &l.intermediate}, {"num_hidden_layers", &l.layers}, {"num_attention_heads", &l.heads},
          {"num_key_value_heads", &l.kv_heads}});
    l.rms_norm_eps = static_cast<float>(real("rms_norm_eps"));
    l.rope_theta = real("rope_theta");
    if (!m.contains("tie_word_embeddings") || !m["tie_word_embeddings"].is_boolean()) throw bad("tie_word_embeddings is not true or false");
    l.tie_word_embeddings = m["tie_word_embeddings"].get<bool>();
  } else {
    GptShape& g = s.shape;
    dims({{"vocab_size", &g.vocab_size}, {"n_ctx", &g.seq_len}, {"n_embd", &g.channels}, {"n_layer", &g.layers}, {"n_head", &g.heads}});
  }
  try {
    if (s.is_llama()) {
      s.llama.validate();
    } else {
      s.shape.validate();
    }
  } catch (const ConfigError& e) {
    throw bad(e.what());
  }
  return s;
}

GptShape model_from_json(const nlohmann::json& m, const std::string& where) {
  const ModelSection s = model_section_from_json(m, where);
  if (s.is_llama()) throw CheckpointError(cat("[checkpoint] ", where, " holds a ", s.describe(), ", not a GPT"));
  return s.shape;
}

namespace {

// The flag's value if given (noting it when it replaces the file's), else the file's.
template <typename T>
T merged(const std::optional<T>& flag, const T& file, const T& unset, const char* flag_name, const char* key,
         std::vector<std::string>& overrides) {
  if (!flag) return file;
  if (file != unset && *flag != file) overrides.push_back(cat(flag_name, " ", *flag, " overrides train_checkpoints.", key, " = ", file));
  return *flag;
}

}  // namespace

void apply_checkpoint_settings(const CheckpointSection& file, const CheckpointFlags& flags, CheckpointOptions& out,
                               std::vector<std::string>& overrides) {
  out.save_dir = merged(flags.save, file.save, std::string(), "--save", "save", overrides);
  out.save_every = merged(flags.save_every, file.save_every, std::int64_t{0}, "--save-every", "save_every", overrides);
  out.keep = merged(flags.keep, file.keep, 0, "--keep", "keep", overrides);
  out.resume = merged(flags.resume, file.resume, std::string(), "--resume", "resume", overrides);
  if (out.save_dir.empty() && (out.save_every > 0 || out.keep > 0)) {
    throw ConfigError(cat("[checkpoint] ", out.save_every > 0 ? "--save-every (train_checkpoints.save_every)" : "--keep (train_checkpoints.keep)",
                          " without a save directory does nothing: add --save DIR (or train_checkpoints.save)"));
  }
}

TrainCheckpoints::TrainCheckpoints(const CheckpointOptions& options, const TrainConfig& config, Communicator& comm,
                                   std::function<void(const std::string&)> note)
    : options_(options), config_(config), comm_(comm), note_(std::move(note)) {
  std::string error;
  if (!options_.resume.empty()) {
    try {
      resume_dir_ = checkpoint::find_checkpoint(options_.resume);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  checkpoint::agree_on_errors(comm_, error);
  if (!options_.save_dir.empty()) {
    checkpoint::SaveOptions s;
    s.dir = options_.save_dir;
    s.keep = options_.keep;
    s.resumed = resume_dir_;
    saver_ = std::make_unique<checkpoint::Saver>(s, comm_);
  }
}

TrainCheckpoints::~TrainCheckpoints() = default;

namespace {
// The manifest's optimizer: its type, step count and every hyper-parameter (Lamb's own too).
nlohmann::json optimizer_json(const TrainConfig& c, std::int64_t step) {
  const AdamConfig& a = c.engine.adam;
  nlohmann::json j = {{"type", c.optimizer_type}, {"step", step}, {"lr", a.lr}, {"betas", {a.beta1, a.beta2}},
                      {"eps", a.eps}, {"weight_decay", a.weight_decay}, {"decoupled_weight_decay", a.decoupled},
                      {"bias_correction", a.bias_correction}};
  if (c.optimizer_type == "Lamb") {  // the spelling the config reader normalises to (trainer.cpp)
    j["max_coeff"] = c.engine.lamb.max_coeff;
    j["min_coeff"] = c.engine.lamb.min_coeff;
    j["eps_inside_sqrt"] = c.engine.lamb.eps_inside_sqrt;
  }
  return j;
}
}  // namespace

nlohmann::json TrainCheckpoints::info(const Engine& engine, std::int64_t step, float loss, std::int64_t data_tokens) const {
  const TrainConfig& c = config_;
  const AdamConfig& a = c.engine.adam;
  return {{"model", model_json(c.model)},
          {"stage", c.engine.stage},
          {"offload", {{"optimizer", engine.config().offload.optimizer}, {"param", engine.config().offload.params}}},
          {"precision", {{"compute", dtype_label(engine.config().precision.compute)}, {"master", "f32"}}},
          {"optimizer", optimizer_json(c, step)},
          {"schedule", schedule_json(c.scheduler)},
          {"lr_next", c.scheduler.lr_at(step, a.lr)},
          {"data", {{"path", options_.data_path}, {"val_path", c.data.val_path}, {"seed", c.data.seed}, {"val_fraction", c.data.val_fraction}, {"tokens", data_tokens},
                    {"tokenizer", options_.tokenizer}, {"next_batch", step}, {"train_batch_size", c.train_batch_size}}},
          {"validation", {{"windows", val_windows_}, {"micro_batch", c.micro_batch_size}}},
          {"seed", c.seed},
          {"init_from", c.model.init_from},
          {"loss", loss},
          {"config", options_.config_json.empty() ? nlohmann::json() : nlohmann::json::parse(options_.config_json)}};
}

nlohmann::json tokenizer_record(const std::string& spec, const data::Tokenizer& tokenizer) {
  nlohmann::json files = nlohmann::json::array();
  for (const std::string& file : tokenizer.files()) {
    const std::string bytes = read_input_file({file, "data", "tokenizer file", std::uint64_t{1} << 30});
    files.push_back({{"path", file}, {"sha256", sha256_hex(bytes.data(), bytes.size())}});
  }
  // An absolute spec, so that generate and eval find the files from any working directory.
  const std::string where = files.empty() ? "bytes" : std::filesystem::absolute(spec).lexically_normal().string();
  return {{"spec", where}, {"description", tokenizer.describe()}, {"files", files}};
}

namespace {

std::vector<std::string> tokenizer_digests(const nlohmann::json& record) {
  std::vector<std::string> digests;
  if (record.is_null()) return digests;
  for (const auto& f : record.value("files", nlohmann::json::array())) digests.push_back(f.value("sha256", ""));
  return digests;
}

// The tokenizer a manifest records, as "description (sha256 ...)"; a checkpoint from before
// tokenizers were recorded was trained on bytes.
std::string tokenizer_words(const nlohmann::json& record) {
  if (record.is_null()) return "bytes (256 tokens)";
  std::string words = record.value("description", std::string("?"));
  const std::vector<std::string> digests = tokenizer_digests(record);
  for (std::size_t i = 0; i < digests.size(); ++i) words += cat(i == 0 ? " (sha256 " : ", ", digests[i], i + 1 == digests.size() ? ")" : "");
  return words;
}

}  // namespace

void check_same_tokenizer(const nlohmann::json& then, const nlohmann::json& now, const std::string& path, const std::string& what_to_do) {
  const bool then_bytes = then.is_null() || then.value("files", nlohmann::json::array()).empty();
  const bool now_bytes = now.is_null() || now.value("files", nlohmann::json::array()).empty();
  if (then_bytes && now_bytes) return;
  const std::vector<std::string> a = tokenizer_digests(then), b = tokenizer_digests(now);
  if (then_bytes != now_bytes || a != b) {
    std::string changed;  // the first file that differs, named, when the two have the same files
    for (std::size_t i = 0; a.size() == b.size() && changed.empty() && i < a.size(); ++i) {
      if (a[i] != b[i]) changed = cat("; its file ", now["files"][i].value("path", std::string("?")), " is not the one trained with");
    }
    throw CheckpointError(cat("[checkpoint] ", path, " was trained with the tokenizer ", tokenizer_words(then),
                              " but this run tokenizes with ", tokenizer_words(now), changed, ": ", what_to_do));
  }
}

checkpoint::Manifest read_resume_manifest(const std::string& dir, const TrainConfig& config, const nlohmann::json& tokenizer) {
  const std::string path = dir + "/manifest.json";
  checkpoint::Manifest m = checkpoint::read_manifest(path);
  check_same_tokenizer(m.info.value("/data/tokenizer"_json_pointer, nlohmann::json()), tokenizer, path,
                       "resume with the checkpoint's tokenizer (--tokenizer), or start a new run");
  if (m.info.contains("model")) {
    const ModelSection saved = model_section_from_json(m.info["model"], path);
    if (model_json(saved) != model_json(config.model)) {
      throw CheckpointError(cat("[checkpoint] ", path, " holds a ", saved.describe(), " but this run builds a ", config.model.describe(),
                                ": set the model section to the checkpoint's model"));
    }
  }
  return m;
}

void check_steps_after_resume(std::int64_t checkpoint_step, std::int64_t train_steps) {
  if (checkpoint_step >= train_steps) {
    throw ConfigError(cat("[train] the checkpoint is at step ", checkpoint_step, " and train_steps is ", train_steps,
                          ": nothing to train. Raise --steps above ", checkpoint_step));
  }
}

void check_checkpoint_options(const CheckpointOptions& o, const TrainConfig& config, int world_size) {
  const std::string resumed = o.resume.empty() ? "" : checkpoint::find_checkpoint(o.resume);
  if (!resumed.empty()) {
    const checkpoint::Manifest m = read_resume_manifest(resumed, config, o.tokenizer);
    check_steps_after_resume(m.step, config.train_steps);
    checkpoint::check_zenflow_fits(m, config.engine, world_size, resumed + "/manifest.json");
  }
  if (!o.save_dir.empty()) {
    const std::string error = checkpoint::check_save_directory(o.save_dir, 0, resumed);
    if (!error.empty()) throw CheckpointError(error);
  }
}

std::int64_t TrainCheckpoints::resume(Engine& engine, std::int64_t data_tokens) {
  if (resume_dir_.empty()) return 0;
  std::string error;
  checkpoint::Manifest m;
  try {
    m = read_resume_manifest(resume_dir_, config_, options_.tokenizer);
  } catch (const Error& e) {
    error = e.what();
  }
  checkpoint::agree_on_errors(comm_, error);
  const checkpoint::LoadStats stats = checkpoint::load_checkpoint(engine, resume_dir_, m, comm_);
  const nlohmann::json& was = m.info;
  std::string diffs;
  auto differs = [&](const char* what, const nlohmann::json& then, const nlohmann::json& now) {
    if (!then.is_null() && then != now) diffs += cat("\n  ", what, ": ", then.dump(), " in the checkpoint, ", now.dump(), " now");
  };
  // The optimizer: its type and every hyper-parameter but the step count (the learning rate among them).
  nlohmann::json optimizer_then = was.value("optimizer", nlohmann::json::object()), optimizer_now = optimizer_json(config_, 0);
  for (auto& [key, now] : optimizer_now.items()) {
    if (key != "step") differs(key == "lr" ? "learning rate" : key == "type" ? "optimizer" : key.c_str(), optimizer_then.value(key, nlohmann::json()), now);
  }
  differs("stage", was.value("stage", nlohmann::json()), config_.engine.stage);
  differs("world size", nlohmann::json(m.world_size), comm_.size());
  differs("train_batch_size", was.value("/data/train_batch_size"_json_pointer, nlohmann::json()), config_.train_batch_size);
  differs("data tokens", was.value("/data/tokens"_json_pointer, nlohmann::json()), data_tokens);
  differs("data seed", was.value("/data/seed"_json_pointer, nlohmann::json()), config_.data.seed);
  differs("precision", was.value("/precision/compute"_json_pointer, nlohmann::json()),
          dtype_label(engine.config().precision.compute));
  if (config_.engine.offload.zenflow.enabled && m.zenflow.is_null()) {
    diffs += "\n  ZenFlow starts afresh (the checkpoint has no ZenFlow state): its columns are chosen at the next step past the warm-up";
  }
  if (stats.applied_pending_update) {
    diffs += "\n  the delayed update in flight at the save was applied now (this run has no delayed step next)";
  }
  if (note_) {
    note_(cat("resumed from ", resume_dir_, " at step ", m.step, " (written by ", m.world_size, " ranks at stage ",
              was.value("stage", -1), "); this rank read ", format_bytes(stats.bytes_read), " in ", stats.seconds * 1e3, " ms (",
              static_cast<double>(stats.bytes_read) / std::max(stats.seconds, 1e-9) / 1e9, " GB/s)",
              diffs.empty() ? "" : "; differences from the run that saved it:" + diffs));
  }
  return m.step;
}

void TrainCheckpoints::after_step(Engine& engine, std::int64_t step, float loss, std::int64_t data_tokens, bool last) {
  if (!saver_) return;
  if (due(step, last)) {
    publish(true);  // a save still being written is published first (waiting for it)
    const checkpoint::SaveStarted s = saver_->save(engine, step, info(engine, step, loss, data_tokens));
    last_saved_ = step;
    if (note_) {
      note_(cat("checkpoint step ", step, ": training stalled ", s.stall_seconds * 1e3, " ms to copy ", format_bytes(s.bytes),
                " per rank; writing in the background"));
    }
  }
  publish(last);
}

bool TrainCheckpoints::due(std::int64_t step, bool last) const {
  return saver_ && (last || (options_.save_every > 0 && step % options_.save_every == 0)) && step != last_saved_;
}

void TrainCheckpoints::publish(bool wait) {
  const std::optional<checkpoint::Published> p = saver_->poll(wait);
  if (p && note_) {
    for (const std::string& w : p->warnings) note_(w);
  }
  if (p && note_) {
    note_(cat("checkpoint step ", p->step, " published: ", p->dir, " (", format_bytes(p->bytes), " in ", p->write_seconds * 1e3,
              " ms, ", p->bytes / std::max(p->write_seconds, 1e-9) / 1e9 / comm_.size(), " GB/s per rank)"));
  }
}

}  // namespace zero
