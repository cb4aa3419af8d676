// The config file and the command-line overrides: reading the JSON text, bounded (nesting depth,
// duplicate keys, numbers beyond a double), with every parser exception turned into a ConfigError
// that names the file, the position or key, and what to do.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "common/error.h"
#include "config/config.h"
#include "config/reader.h"

namespace zero {

using namespace config_detail;

namespace {

// Line and column (1-based) of the byte nlohmann reports: the 1-based index of the last byte read.
std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t byte) {
  const std::size_t at = std::min(byte == 0 ? 0 : byte - 1, text.size());
  std::size_t line = 1, line_start = 0;
  for (std::size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') ++line, line_start = i + 1;
  }
  return {line, at - line_start + 1};
}

// Where the parser is: one frame per open object or array, with the keys seen in it.
struct Frame {
  std::set<std::string> keys;
  std::string key = "[]";  // the key being read ("[]" inside an array), for paths
};
using Frames = std::vector<Frame>;

std::string path_of(const Frames& frames) {
  std::string full;
  for (const Frame& fr : frames) {
    if (fr.key == "[]") continue;
    if (full.size() > 200) return full + "...";
    full += (full.empty() ? "" : ".") + fr.key;
  }
  return full;
}

// The parser's callback: refuses nesting deeper than kMaxConfigDepth (so that nothing later
// recurses without bound) and a key written twice in one object (nlohmann would keep the last;
// DeepSpeed rejects the file too, since the first value would be silently dropped).
nlohmann::json::parser_callback_t bounded(const std::string& what, std::shared_ptr<Frames> frames) {
  return [frames, what](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      if (depth >= kMaxConfigDepth) {
        throw ConfigError(cat("[config] ", what, ": objects or arrays nested more than ", kMaxConfigDepth, " deep (at '",
                              path_of(*frames), "'); a DeepSpeed config nests 4 levels: check the file"));
      }
      frames->push_back({});
    }
    if ((event == E::object_end || event == E::array_end) && !frames->empty()) frames->pop_back();
    if (event == E::key && !frames->empty()) {
      Frame& f = frames->back();
      f.key = parsed.get<std::string>();
      if (!f.keys.insert(f.key).second) throw ConfigError(cat("[config] ", what, ": key '", path_of(*frames), "' appears twice; keep one"));
    }
    return true;
  };
}

// nlohmann's out_of_range 406 says "number overflow parsing '<number>'": the number, shortened.
std::string overflowing_number(const nlohmann::json::out_of_range& e) {
  std::string what = e.what();
  const auto q = what.find('\'');
  if (q == std::string::npos) return "a number";
  what = what.substr(q + 1);
  if (!what.empty() && what.back() == '\'') what.pop_back();
  return what.size() > 40 ? what.substr(0, 37) + "..." : what;
}

}  // namespace

nlohmann::json read_config_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw ConfigError(cat("[config] config file '", path, "' ", std::filesystem::exists(path, ec) ? "is not a regular file" : "does not exist",
                          "; check the path"));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (!in) throw ConfigError(cat("[config] cannot read config file '", path, "'"));
  const std::string text = buffer.str();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw ConfigError(cat("[config] config file '", path, "' is empty; it must hold a JSON object such as {\"train_batch_size\": 8}"));
  }
  auto frames = std::make_shared<Frames>();
  try {
    return nlohmann::json::parse(text, bounded(path, frames));
  } catch (const nlohmann::json::parse_error& e) {
    const auto [line, column] = line_column(text, e.byte);
    std::string what = e.what();  // "[json.exception.parse_error.101] parse error at line 1, column 2: <reason>"
    const auto reason = what.find(": ", what.find("parse error"));
    if (reason != std::string::npos) what = what.substr(reason + 2);
    throw ConfigError(cat("[config] ", path, ":", line, ":", column, ": JSON syntax error: ", what,
                          ". Fix the file (often a trailing comma, a missing comma or quote; JSON has no comments)"));
  } catch (const nlohmann::json::out_of_range& e) {
    throw ConfigError(cat("[config] ", path, ": key '", path_of(*frames), "' has the number ", overflowing_number(e),
                          ", beyond the range of a double (about 1.8e308); write a number that size can hold"));
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(cat("[config] ", path, ": cannot read the JSON near key '", path_of(*frames), "': ", e.what()));
  }
}

TrainConfig load_config(const std::string& path, int world_size, ConfigOptions options) {
  options.source = path;
  return parse_config(read_config_file(path), world_size, options);
}

void apply_override(nlohmann::json& j, const std::string& dotted_key, const nlohmann::json& value) {
  std::vector<std::string> parts;
  std::stringstream ss(dotted_key);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  if (dotted_key.empty() || dotted_key.back() == '.' || std::find(parts.begin(), parts.end(), "") != parts.end()) {
    throw ConfigError(cat("[config] override key '", dotted_key, "' is not a dotted key path like zero_optimization.stage"));
  }
  if (parts.size() > static_cast<std::size_t>(kMaxConfigDepth)) {
    throw ConfigError(cat("[config] override key '", dotted_key.substr(0, 60), "...' has more than ", kMaxConfigDepth, " parts"));
  }
  nlohmann::json* node = &j;
  std::string walked;
  for (const std::string& part : parts) {
    if (node->is_null()) *node = nlohmann::json::object();
    if (!node->is_object()) {
      throw ConfigError(cat("[config] override ", dotted_key, ": '", walked, "' is ", describe_value(*node),
                            ", not an object, so it has no key '", part, "'"));
    }
    walked += (walked.empty() ? "" : ".") + part;
    node = &(*node)[part];
  }
  *node = value;
}

void apply_override(nlohmann::json& j, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos) {
    throw ConfigError(cat("[config] override '", assignment, "' must look like key=value, e.g. zero_optimization.stage=2"));
  }
  const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text, bounded(cat("override ", key), std::make_shared<Frames>()));
  } catch (const nlohmann::json::parse_error&) {
    value = text;  // not JSON: a plain string such as a path
  } catch (const nlohmann::json::out_of_range& e) {
    throw ConfigError(cat("[config] override ", key, ": the number ", overflowing_number(e),
                          " is beyond the range of a double (about 1.8e308); give a smaller number"));
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(cat("[config] override ", key, ": cannot read '", text.substr(0, 40), "': ", e.what()));
  }
  apply_override(j, key, value);
}

}  // namespace zero
