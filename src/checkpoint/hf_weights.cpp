#include "checkpoint/hf_weights.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/loader.h"
#include "common/input_file.h"
#include "model/gpt_hf_names.h"

namespace zero::checkpoint {
namespace fs = std::filesystem;

// The weight files and, for shards, which file the index says holds each tensor.
struct HfWeights::Listing {
  std::vector<std::string> files;
  std::map<std::string, std::string> weight_map;  // tensor -> shard file name; empty for one file
  std::string index;                              // the index's path; empty for one file
};

namespace {

constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";
constexpr std::size_t kPieceElements = std::size_t{1} << 22;  // read and written at a time: 16 MiB of f32

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// "h.0.attn.bias" and the like: one named block's tensor, `suffix` after the layer number.
bool is_block_tensor(const std::string& name, const std::string& prefix, const std::string& suffix) {
  if (name.rfind(prefix, 0) != 0 || name.size() <= prefix.size() + suffix.size()) return false;
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  const std::string number = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  return !number.empty() && std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += cat(i ? ", " : "", s[i]);
  return t + "]";
}

}  // namespace

HfWeights::Listing HfWeights::list_weight_files(const std::string& dir) {
  HfWeights::Listing l;
  if (is_file(fs::path(dir) / kSingle)) {
    l.files.push_back((fs::path(dir) / kSingle).string());
    return l;
  }
  l.index = (fs::path(dir) / kIndex).string();
  if (!is_file(l.index)) {
    throw CheckpointError(cat("[hf] ", dir, " holds neither ", kSingle, " nor ", kIndex, ": zero reads safetensors weights "
                              "(a pytorch_model.bin is not read; save the model with save_pretrained(safe_serialization=True))"));
  }
  const nlohmann::json j = nlohmann::json::parse(read_input_file({l.index, "hf", "weight index", std::uint64_t{256} << 20}), nullptr, false);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
    throw CheckpointError(cat("[hf] ", l.index, " is not an index {\"weight_map\": {tensor: file}}: the file is damaged"));
  }
  std::set<std::string> shards;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    const std::string name = file.is_string() ? file.get<std::string>() : "";
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      throw CheckpointError(cat("[hf] ", l.index, ": tensor '", tensor, "' maps to ", file.dump().substr(0, 80),
                                ", not the name of a file in the directory"));
    }
    if (!is_file(fs::path(dir) / name)) {
      throw CheckpointError(cat("[hf] ", l.index, " names the shard ", name, " for tensor '", tensor, "', but ",
                                (fs::path(dir) / name).string(), " is missing: copy the whole model directory"));
    }
    l.weight_map[tensor] = name;
    if (shards.insert(name).second) l.files.push_back((fs::path(dir) / name).string());
  }
  return l;
}

HfWeights::HfWeights(const std::string& dir, const std::vector<UnitSpec>& units, bool llama) {
  const Listing listing = list_weight_files(dir);
  open_files(listing);
  files_text_ = listing.files.size() == 1 ? listing.files[0] : cat(listing.index, "'s ", listing.files.size(), " shards");
  // GPT2Model saves without the prefix GPT2LMHeadModel's tensors have.
  const std::string prefix = !llama && tensor_file_.count("transformer.wte.weight") ? "transformer." : "";
  for (const UnitSpec& unit : units) {
    for (const ParamSpec& p : unit.params) match(p, llama, prefix);
  }
  check_unread(llama, prefix, units.at(0).params.at(0).shape);  // the first parameter is the token embedding in both families
}

void HfWeights::open_files(const Listing& listing) {
  for (const std::string& path : listing.files) {
    files_.push_back(std::make_unique<SafetensorsFile>(path));
    file_names_.push_back(path);
    const int f = static_cast<int>(files_.size()) - 1;
    for (const auto& [name, t] : files_.back()->tensors()) {
      if (tensor_file_.count(name)) throw CheckpointError(cat("[hf] tensor '", name, "' is in both ", file_names_[tensor_file_[name]], " and ", path));
      if (!listing.index.empty() && listing.weight_map.count(name) == 0) {
        throw CheckpointError(cat("[hf] ", path, " holds tensor '", name, "', which ", listing.index, " does not list: the index is stale"));
      }
      tensor_file_[name] = f;
    }
  }
  for (const auto& [name, file] : listing.weight_map) {
    const auto it = tensor_file_.find(name);
    if (it == tensor_file_.end() || fs::path(file_names_[it->second]).filename() != file) {
      throw CheckpointError(cat("[hf] ", listing.index, " says tensor '", name, "' is in ", file, ", but that shard does not hold it"));
    }
  }
}

void HfWeights::match(const ParamSpec& p, bool llama, const std::string& prefix) {
  Source s{0, p.name, false};
  if (!llama) {
    const HfTensor t = gpt2_tensor(p.name);
    s.tensor = prefix + t.name.substr(t.name.rfind("transformer.", 0) == 0 ? 12 : 0);
    s.transpose = t.transpose;
  }
  std::vector<std::int64_t> want = p.shape;
  if (s.transpose) std::reverse(want.begin(), want.end());
  const auto it = tensor_file_.find(s.tensor);
  if (it == tensor_file_.end()) {
    throw CheckpointError(cat("[hf] tensor '", s.tensor, "' is missing from ", files_text_, " (zero's ", p.name, ", shape ", shape_text(want), ")"));
  }
  s.file = it->second;
  const SafetensorsTensor& t = files_[s.file]->tensors().at(s.tensor);
  if (t.shape != want) {
    throw CheckpointError(cat("[hf] ", file_names_[s.file], ": tensor '", s.tensor, "' has shape ", shape_text(t.shape),
                              ", but the model of config.json needs ", shape_text(want)));
  }
  if (!safetensors_dtype_readable(t.dtype)) {
    throw CheckpointError(cat("[hf] ", file_names_[s.file], ": tensor '", s.tensor, "' is ", t.dtype, "; zero reads F32, F16 and BF16 weights"));
  }
  weight_bytes_ += t.end - t.begin;
  read_by_.insert(s.tensor);
  sources_[p.name] = s;
}

void HfWeights::check_unread(bool llama, const std::string& prefix, const std::vector<std::int64_t>& embedding_shape) const {
  for (const auto& [name, f] : tensor_file_) {
    if (read_by_.count(name)) continue;
    const bool mask = !llama && (is_block_tensor(name, prefix + "h.", ".attn.bias") || is_block_tensor(name, prefix + "h.", ".attn.masked_bias"));
    const bool inv_freq = llama && is_block_tensor(name, "model.layers.", ".self_attn.rotary_emb.inv_freq");
    const bool tied_head = name == "lm_head.weight" && files_[f]->tensors().at(name).shape == embedding_shape;
    if (!mask && !inv_freq && !tied_head) {
      throw CheckpointError(cat("[hf] ", file_names_[f], " holds tensor '", name, "', which the ", llama ? "LLaMA" : "GPT-2",
                                " of config.json does not have: the weights are of another model or architecture"));
    }
  }
}

HfWeights::~HfWeights() = default;

std::uint64_t HfWeights::bytes_read() const {
  std::uint64_t n = 0;
  for (const auto& f : files_) n += f->bytes_read();
  return n;
}

void HfWeights::read(const ParamPlace& p, std::size_t first, std::size_t count, float* out) {
  const Source& s = sources_.at(p.spec.name);
  SafetensorsFile& file = *files_[s.file];
  if (!s.transpose) {
    file.read(s.tensor, first, count, out);
    return;
  }
  // zero's (rows, cols) is the file's (cols, rows): zero's rows r0..r1 are a run of `n` elements in
  // each of the file's `cols` rows.
  const std::size_t rows = static_cast<std::size_t>(p.spec.shape[0]), cols = static_cast<std::size_t>(p.spec.shape[1]);
  const std::size_t r0 = first / cols, n = (first + count - 1) / cols - r0 + 1;
  rows_.resize(cols * n);
  if (n == rows) {
    file.read(s.tensor, 0, rows * cols, rows_.data());
  } else {
    for (std::size_t c = 0; c < cols; ++c) file.read(s.tensor, c * rows + r0, n, rows_.data() + c * n);
  }
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t e = first + i;
    out[i] = rows_[(e % cols) * n + (e / cols - r0)];
  }
}

HfImportStats import_hf_weights(Engine& engine, const std::string& dir, bool llama, Communicator& comm) {
  const auto t0 = std::chrono::steady_clock::now();
  const FlatLayout& layout = engine.layout();
  ZERO_CHECK(engine.steps_done() == 0, "weights imported into an engine that has trained ", engine.steps_done(), " steps");
  HfImportStats stats;
  std::string error;
  try {
    std::vector<UnitSpec> units;
    for (int u = 0; u < layout.num_units(); ++u) {
      UnitSpec spec{layout.unit(u).name, {}, layout.unit(u).borrows};
      for (const ParamPlace& p : layout.unit(u).params) spec.params.push_back(p.spec);
      units.push_back(std::move(spec));
    }
    HfWeights weights(dir, units, llama);
    std::vector<float> buf;  // (at most a piece) f32, host memory
    for (int u = 0; u < layout.num_units(); ++u) {
      const Engine::HeldRange held = engine.held_state(u);
      for (const ParamPlace& p : layout.unit(u).params) {
        const std::size_t begin = std::max(held.first, p.offset), end = std::min(held.first + held.count, p.offset + p.numel);
        // Pieces of whole rows from the parameter's start: a transposed tensor's rows are read once,
        // and a small buffer stays in memory instead of a unit-sized one (padding is a fresh engine's zeros).
        const std::size_t row = p.spec.shape.size() == 2 ? static_cast<std::size_t>(p.spec.shape[1]) : 1;
        const std::size_t piece = std::max(row, kPieceElements / row * row);
        for (std::size_t at = begin; at < end;) {
          const std::size_t next = std::min(end, p.offset + ((at - p.offset) / piece + 1) * piece);
          buf.resize(next - at);
          weights.read(p, at - p.offset, next - at, buf.data());
          engine.write_state(StateTensor::kMaster, u, at, buf);  // Adam's moments stay a fresh engine's zeros
          at = next;
        }
      }
    }
    stats.bytes_read = weights.bytes_read();
    stats.weight_bytes = weights.weight_bytes();
  } catch (const Error& e) {
    error = e.what();
  }
  agree_on_errors(comm, error);  // before any rank uses what it read
  engine.state_written(EngineCounters{});
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return stats;
}

}  // namespace zero::checkpoint
