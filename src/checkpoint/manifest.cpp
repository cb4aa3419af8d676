#include "checkpoint/manifest.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "engine/engine.h"

namespace zero::checkpoint {
namespace {

std::string hex64(std::uint64_t x) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

// A field of the manifest, with an error naming the file and the field when it is missing or of
// another type.
template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& path) {
  if (!j.is_object() || !j.contains(key)) {
    throw CheckpointError(cat("[checkpoint] ", path, " has no '", key, "': the manifest is damaged or not a zero checkpoint"));
  }
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw CheckpointError(cat("[checkpoint] ", path, ": '", key, "' is ", j.at(key).dump(), ", not the expected type"));
  }
}

}  // namespace

std::uint64_t Manifest::tensor_byte(int u, int t) const {
  const UnitRecord& unit = units.at(static_cast<std::size_t>(u));
  return sizeof(float) * (tensors.size() * unit.shard_offset + static_cast<std::size_t>(t) * unit.slice);
}

std::uint64_t Manifest::rank_file_bytes() const {
  std::uint64_t slices = 0;
  for (const UnitRecord& u : units) slices += u.slice;
  return sizeof(float) * tensors.size() * slices;
}

Manifest describe_layout(const FlatLayout& layout) {
  Manifest m;
  m.world_size = layout.world_size();
  m.layout_fingerprint = hex64(layout.fingerprint());
  m.tensors = {"master", "exp_avg", "exp_avg_sq"};
  static_assert(kNumStateTensors == 3);
  m.parameters = nlohmann::json::array();
  std::size_t global = 0;
  for (int u = 0; u < layout.num_units(); ++u) {
    const UnitPlace& unit = layout.unit(u);
    m.units.push_back({unit.name, unit.numel, unit.padded, unit.slice, unit.shard_offset});
    for (const ParamPlace& p : unit.params) {
      m.parameters.push_back({{"name", p.spec.name}, {"shape", p.spec.shape}, {"dtype", "f32"}, {"unit", u},
                              {"offset", global + p.offset}, {"unit_offset", p.offset}});
    }
    global += unit.numel;
  }
  return m;
}

void record_counters(Manifest& m, const EngineCounters& c) {
  m.step = c.steps_done;
  m.skipped_steps = c.skipped_steps;
  m.loss_scaler = nullptr;
  if (c.loss_scaler) {
    const LossScalerState& s = *c.loss_scaler;
    m.loss_scaler = {{"scale", s.scale}, {"hysteresis_left", s.hysteresis_left}, {"iter", s.iter},
                     {"last_overflow_iter", s.last_overflow_iter}};
  }
  if (c.update_in_flight) m.tensors.push_back(kParamsInUseName);
}

EngineCounters counters_of(const Manifest& m) {
  EngineCounters c;
  c.steps_done = m.step;
  c.skipped_steps = m.skipped_steps;
  if (!m.loss_scaler.is_null()) {
    const nlohmann::json& j = m.loss_scaler;
    c.loss_scaler = LossScalerState{j["scale"].get<double>(), j["hysteresis_left"].get<int>(), j["iter"].get<std::int64_t>(),
                                    j["last_overflow_iter"].get<std::int64_t>()};
  }
  c.update_in_flight = m.tensors.size() > static_cast<std::size_t>(kNumStateTensors);
  return c;
}

std::string step_dir_name(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}

std::string rank_file_name(int rank, int world_size) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "rank-%05d-of-%05d.bin", rank, world_size);
  return buf;
}

nlohmann::json to_json(const Manifest& m) {
  nlohmann::json units = nlohmann::json::array(), files = nlohmann::json::array();
  for (const UnitRecord& u : m.units) {
    units.push_back({{"name", u.name}, {"numel", u.numel}, {"padded", u.padded}, {"slice", u.slice}, {"shard_offset", u.shard_offset}});
  }
  for (std::size_t r = 0; r < m.files.size(); ++r) {
    const FileRecord& f = m.files[r];
    files.push_back({{"rank", r}, {"name", f.name}, {"bytes", f.bytes}, {"crc32", f.crc32}, {"block_crc32", f.block_crc32}});
  }
  nlohmann::json tensors = nlohmann::json::array();
  for (const std::string& t : m.tensors) tensors.push_back({{"name", t}, {"dtype", "f32"}});
  return {{"format", kFormatName},
          {"version", m.version},
          {"step", m.step},
          {"world_size", m.world_size},
          {"layout_fingerprint", m.layout_fingerprint},
          {"padding", "each unit zero-padded to a multiple of world_size; rank r holds elements [r*slice, (r+1)*slice)"},
          {"rank_file_layout", "for each unit, for each tensor: the rank's slice of the unit, little-endian"},
          {"units", units},
          {"tensors", tensors},
          {"parameters", m.parameters},
          {"checksum", {{"algorithm", "crc32"}, {"block_bytes", m.block_bytes}}},
          {"files", files},
          {"skipped_steps", m.skipped_steps},
          {"loss_scaler", m.loss_scaler},
          {"info", m.info}};
}

Manifest from_json(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object() || j.value("format", std::string()) != kFormatName) {
    throw CheckpointError(cat("[checkpoint] ", path, " is not a zero checkpoint manifest (no \"format\": \"", kFormatName, "\")"));
  }
  Manifest m;
  m.version = field<int>(j, "version", path);
  if (m.version != kFormatVersion) {
    throw CheckpointError(cat("[checkpoint] ", path, " is format version ", m.version, "; this zero reads version ",
                              kFormatVersion, " only: use the zero that wrote it, or save it again"));
  }
  m.step = field<std::int64_t>(j, "step", path);
  m.world_size = field<int>(j, "world_size", path);
  m.layout_fingerprint = field<std::string>(j, "layout_fingerprint", path);
  for (const auto& u : field<nlohmann::json>(j, "units", path)) {
    m.units.push_back({field<std::string>(u, "name", path), field<std::size_t>(u, "numel", path),
                       field<std::size_t>(u, "padded", path), field<std::size_t>(u, "slice", path),
                       field<std::size_t>(u, "shard_offset", path)});
  }
  for (const auto& t : field<nlohmann::json>(j, "tensors", path)) {
    if (field<std::string>(t, "dtype", path) != "f32") {
      throw CheckpointError(cat("[checkpoint] ", path, ": tensor ", t.dump(), " is not f32, which this zero cannot read"));
    }
    m.tensors.push_back(field<std::string>(t, "name", path));
  }
  std::vector<std::string> known{"master", "exp_avg", "exp_avg_sq"};
  if (m.tensors.size() == 4) known.push_back(kParamsInUseName);
  if (m.tensors != known) {
    throw CheckpointError(cat("[checkpoint] ", path, ": the tensors are not master, exp_avg, exp_avg_sq[, ", kParamsInUseName,
                              "] (an optimizer this zero does not have)"));
  }
  m.skipped_steps = j.value("skipped_steps", std::int64_t{0});
  m.loss_scaler = j.value("loss_scaler", nlohmann::json());
  if (m.skipped_steps < 0 || m.skipped_steps > m.step || !(m.loss_scaler.is_null() || m.loss_scaler.is_object())) {
    throw CheckpointError(cat("[checkpoint] ", path, ": skipped_steps ", m.skipped_steps, " or loss_scaler ", m.loss_scaler.dump(),
                              " is not a state a run of ", m.step, " steps can have: the manifest is damaged"));
  }
  if (!m.loss_scaler.is_null()) {
    for (const char* key : {"scale", "hysteresis_left", "iter", "last_overflow_iter"}) {
      if (!m.loss_scaler.contains(key) || !m.loss_scaler[key].is_number()) {
        throw CheckpointError(cat("[checkpoint] ", path, ": loss_scaler has no number '", key, "': the manifest is damaged"));
      }
    }
  }
  m.block_bytes = field<std::uint64_t>(field<nlohmann::json>(j, "checksum", path), "block_bytes", path);
  if (m.block_bytes == 0) throw CheckpointError(cat("[checkpoint] ", path, ": checksum.block_bytes is 0"));
  for (const auto& f : field<nlohmann::json>(j, "files", path)) {
    m.files.push_back({field<std::string>(f, "name", path), field<std::uint64_t>(f, "bytes", path),
                       field<std::uint32_t>(f, "crc32", path), field<std::vector<std::uint32_t>>(f, "block_crc32", path)});
  }
  if (m.world_size < 1 || static_cast<int>(m.files.size()) != m.world_size) {
    throw CheckpointError(cat("[checkpoint] ", path, " lists ", m.files.size(), " rank files for a world of ", m.world_size));
  }
  m.parameters = field<nlohmann::json>(j, "parameters", path);
  m.info = j.value("info", nlohmann::json::object());
  return m;
}

Manifest read_manifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CheckpointError(cat("[checkpoint] cannot open ", path, ": the checkpoint is incomplete or was moved"));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(cat("[checkpoint] ", path, " is not valid JSON (", e.what(), "): the manifest is damaged"));
  }
  return from_json(j, path);
}

}  // namespace zero::checkpoint
