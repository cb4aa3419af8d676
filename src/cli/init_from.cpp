#include "cli/init_from.h"

#include "common/error.h"
#include "config/init_from.h"
#include "data/tokenizer.h"
#include "train/checkpointing.h"

namespace zero::cli {

std::string init_from_tokenizer(const std::string& dir, const std::string& given, const std::string& given_source) {
  if (!data::holds_tokenizer(dir)) return given;
  if (given.empty()) return dir;
  // Compared by the files' SHA-256 (tokenizer_record), as a resumed run compares its tokenizer.
  const nlohmann::json theirs = tokenizer_record(dir, *data::open_tokenizer(dir));
  const nlohmann::json mine = tokenizer_record(given, *data::open_tokenizer(given));
  std::vector<std::string> a, b;
  for (const auto& f : theirs["files"]) a.push_back(f["sha256"]);
  for (const auto& f : mine["files"]) b.push_back(f["sha256"]);
  if (a == b) return given;
  throw ConfigError(cat("[cli] ", given_source, " is ", mine["description"].get<std::string>(), " but the --init-from directory ", dir,
                        " brings its own tokenizer, ", theirs["description"].get<std::string>(),
                        ", which the model was trained with: leave the tokenizer out (the directory's is used), or give the same files"));
}

void apply_init_from_flags(nlohmann::json& j, const nlohmann::json& file_model, const Flags& flags) {
  const nlohmann::json::json_pointer at("/model/init_from");
  if (!j.contains(at) || !j[at].is_string() || j[at].get<std::string>().empty()) return;
  const std::string dir = j[at].get<std::string>();
  // Where a model key the run gives came from: the last --set naming it, else the config file.
  const auto source_of = [&](const std::string& key) -> std::string {
    std::string set;
    for (const std::string& a : flags.get_all("set")) {
      const std::string k = a.substr(0, a.find('='));
      if (k == "model." + key || k == "model") set = "--set " + a;
    }
    if (!set.empty()) return set;
    if (file_model.is_object() && file_model.contains(key)) return cat("--config ", flags.get("config"));
    return "";
  };
  apply_init_from(j, dir, source_of);
  const nlohmann::json::json_pointer tok("/data/tokenizer"), format("/data/format");
  if (j.contains(format) && j[format] == "bin") return;  // tokens already made: no tokenizer applies
  const std::string given = j.contains(tok) && j[tok].is_string() ? j[tok].get<std::string>() : "";
  const std::string source = flags.has("tokenizer") ? "--tokenizer" : "data.tokenizer (--config)";
  const std::string spec = init_from_tokenizer(dir, given, source);
  if (!spec.empty()) j["data"]["tokenizer"] = spec;
}

}  // namespace zero::cli
