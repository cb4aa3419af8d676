#include "checkpoint/manifest.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>

#include "checkpoint/directory.h"
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
  const nlohmann::json& v = j.at(key);
  const auto wrong = [&] {
    return CheckpointError(cat("[checkpoint] ", path, ": '", key, "' is ", v.dump().substr(0, 200), ", not the expected type"));
  };
  if constexpr (std::is_integral_v<T>) {  // exact integers only: get<int>() of 1e300 or -1 as size_t would not be
    if (std::is_unsigned_v<T> ? !v.is_number_unsigned() : !v.is_number_integer()) throw wrong();
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max())
                               : v.get<std::int64_t>() < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
                                     v.get<std::int64_t>() > static_cast<std::int64_t>(std::numeric_limits<T>::max())) {
      throw wrong();
    }
  }
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw wrong();
  }
}

[[noreturn]] void damaged(const std::string& path, const std::string& what) {
  throw CheckpointError(cat("[checkpoint] ", path, ": ", what, ": the manifest is damaged or was edited; save the checkpoint again"));
}

// Beyond any checkpoint zero writes (the planner's limits: 2^44 parameters, 2^20 ranks): a
// number past them is damage, and every product below stays inside 64 bits.
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 44;
constexpr int kMaxWorld = 1 << 20;
constexpr std::size_t kMaxUnits = std::size_t{1} << 20;

// The layout's arithmetic, checked once here, so that no reader of a damaged or edited manifest
// divides by zero, overflows an offset or reads outside a rank file.
void check_consistent(const Manifest& m, const std::string& path) {
  if (m.step < 0) damaged(path, cat("step is ", m.step));
  if (m.world_size > kMaxWorld) damaged(path, cat("world_size is ", m.world_size));
  if (m.units.size() > kMaxUnits) damaged(path, cat(m.units.size(), " units"));
  const auto W = static_cast<std::uint64_t>(m.world_size);
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < m.units.size(); ++i) {
    const UnitRecord& u = m.units[i];
    if (u.slice > kMaxElements || u.padded != u.slice * W || u.numel > u.padded || u.shard_offset != offset) {
      damaged(path, cat("unit ", i, " (", u.name, ") has numel ", u.numel, ", padded ", u.padded, ", slice ", u.slice,
                        " and shard_offset ", u.shard_offset, ", which no layout of ", m.world_size, " ranks has"));
    }
    offset += u.slice;
    if (offset > kMaxElements) damaged(path, cat("the units' slices add up to more than 2^44 elements"));
  }
  for (std::size_t r = 0; r < m.files.size(); ++r) {
    const FileRecord& f = m.files[r];
    if (f.name != rank_file_name(static_cast<int>(r), m.world_size)) {
      damaged(path, cat("rank file ", r, " is named '", f.name.substr(0, 200), "', not ", rank_file_name(static_cast<int>(r), m.world_size)));
    }
    const std::uint64_t blocks = f.bytes / m.block_bytes + (f.bytes % m.block_bytes != 0);
    if (f.bytes != m.rank_file_bytes() || f.block_crc32.size() != blocks) {
      damaged(path, cat("rank file ", r, " is listed as ", f.bytes, " bytes in ", f.block_crc32.size(), " checksum blocks; the units make it ",
                        m.rank_file_bytes(), " bytes"));
    }
  }
  if (!m.parameters.is_array()) damaged(path, "'parameters' is not an array");
  for (std::size_t i = 0; i < m.parameters.size(); ++i) {
    const nlohmann::json& p = m.parameters[i];
    bool ok = p.is_object() && p.contains("name") && p["name"].is_string() && p.contains("shape") && p["shape"].is_array() &&
              p.contains("unit") && p["unit"].is_number_unsigned() && p["unit"].get<std::uint64_t>() < m.units.size() &&
              p.contains("unit_offset") && p["unit_offset"].is_number_unsigned();
    std::uint64_t numel = 1;
    for (std::size_t d = 0; ok && d < p["shape"].size(); ++d) {
      const nlohmann::json& dim = p["shape"][d];
      ok = dim.is_number_unsigned() && dim.get<std::uint64_t>() <= kMaxElements && numel <= kMaxElements;
      if (ok) numel *= dim.get<std::uint64_t>();
    }
    ok = ok && numel <= kMaxElements && p["unit_offset"].get<std::uint64_t>() <= kMaxElements &&
         p["unit_offset"].get<std::uint64_t>() + numel <= m.units[p["unit"].get<std::size_t>()].numel;
    if (!ok) damaged(path, cat("parameter ", i, " is ", p.dump().substr(0, 200), ", not a name, shape, unit and unit_offset inside that unit"));
  }
  if (!m.info.is_object()) damaged(path, "'info' is not an object");
  // The trainer's fields that inspect, eval, generate and resume read, where present.
  struct Expected {
    const char* pointer;
    const char* what;
    bool (*ok)(const nlohmann::json&);
  };
  static const Expected expected[] = {
      {"/stage", "a stage 0-3", [](const nlohmann::json& v) { return v.is_number_integer() && v >= 0 && v <= 3; }},
      {"/loss", "a number", [](const nlohmann::json& v) { return v.is_number(); }},
      {"/lr_next", "a number", [](const nlohmann::json& v) { return v.is_number(); }},
      {"/optimizer", "an object", [](const nlohmann::json& v) { return v.is_object(); }},
      {"/data", "an object", [](const nlohmann::json& v) { return v.is_object(); }},
      {"/validation", "an object", [](const nlohmann::json& v) { return v.is_object(); }},
      {"/data/path", "a string", [](const nlohmann::json& v) { return v.is_string(); }},
      {"/data/val_fraction", "a number in [0, 1)", [](const nlohmann::json& v) { return v.is_number() && v >= 0 && v < 1; }},
      {"/validation/micro_batch", "an integer 1 to 2^20",
       [](const nlohmann::json& v) { return v.is_number_integer() && v >= 1 && v <= (1 << 20); }},
      {"/validation/windows", "an integer 0 to 2^30",
       [](const nlohmann::json& v) { return v.is_number_integer() && v >= 0 && v <= (1 << 30); }}};
  for (const Expected& e : expected) {
    const nlohmann::json::json_pointer at(e.pointer);
    if (m.info.contains(at) && !e.ok(m.info.at(at))) {
      damaged(path, cat("info", e.pointer, " is ", m.info.at(at).dump().substr(0, 100), ", not ", e.what));
    }
  }
}

// The ZenFlow record, or null: its counters checked, so that counters_of reads them safely.
nlohmann::json read_zenflow(const nlohmann::json& j, const std::string& path) {
  const nlohmann::json z = j.value("zenflow", nlohmann::json());
  if (z.is_null()) return z;
  const bool ok = z.is_object() && z.contains("summed") && z["summed"].is_number_integer() && z["summed"].get<std::int64_t>() >= 0 &&
                  z["summed"].get<std::int64_t>() <= INT32_MAX && z.contains("in_flight") && z["in_flight"].is_boolean() &&
                  (!z.contains("options") || z["options"].is_object());
  if (!ok) damaged(path, cat("'zenflow' is ", z.dump().substr(0, 200), ", not {summed, in_flight, options}"));
  return z;
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
  m.zenflow = nullptr;
  if (c.zenflow) {
    m.tensors = zenflow_tensor_names();
    m.zenflow = {{"summed", c.zenflow->summed}, {"in_flight", c.zenflow->in_flight}};
  }
}

std::vector<std::string> zenflow_tensor_names() {
  return {"master", "exp_avg", "exp_avg_sq", kParamsInUseName, "zenflow_grad_sum", "zenflow_selected", "zenflow_exp_avg",
          "zenflow_exp_avg_sq"};
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
  c.update_in_flight = m.tensors.size() > static_cast<std::size_t>(kNumStateTensors) && m.zenflow.is_null();
  if (!m.zenflow.is_null()) c.zenflow = ZenflowCounters{m.zenflow.at("summed").get<int>(), m.zenflow.at("in_flight").get<bool>()};
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
          {"zenflow", m.zenflow},
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
  m.zenflow = read_zenflow(j, path);
  std::vector<std::string> known{"master", "exp_avg", "exp_avg_sq"};
  if (m.tensors.size() == 4) known.push_back(kParamsInUseName);
  if (!m.zenflow.is_null()) known = zenflow_tensor_names();
  if (m.tensors != known) {
    throw CheckpointError(cat("[checkpoint] ", path, ": the tensors are not master, exp_avg, exp_avg_sq[, ", kParamsInUseName,
                              "] (an optimizer this zero does not have), or a ZenFlow checkpoint's without its 'zenflow' record"));
  }
  if (j.contains("skipped_steps") && !j["skipped_steps"].is_number_integer()) damaged(path, "'skipped_steps' is not an integer");
  m.skipped_steps = j.value("skipped_steps", std::int64_t{0});
  m.loss_scaler = j.value("loss_scaler", nlohmann::json());
  if (m.skipped_steps < 0 || m.skipped_steps > m.step || !(m.loss_scaler.is_null() || m.loss_scaler.is_object())) {
    throw CheckpointError(cat("[checkpoint] ", path, ": skipped_steps ", m.skipped_steps, " or loss_scaler ", m.loss_scaler.dump(),
                              " is not a state a run of ", m.step, " steps can have: the manifest is damaged"));
  }
  if (!m.loss_scaler.is_null()) {
    for (const char* key : {"scale", "hysteresis_left", "iter", "last_overflow_iter"}) {
      const nlohmann::json& v = m.loss_scaler.contains(key) ? m.loss_scaler[key] : nlohmann::json();
      const bool ok = std::string(key) == "scale" ? v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0
                                                  : v.is_number_integer() && v.get<std::int64_t>() >= -1 &&
                                                        v.get<std::int64_t>() <= (std::string(key) == "hysteresis_left" ? INT32_MAX : INT64_MAX);
      if (!ok) {
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
  check_consistent(m, path);
  return m;
}

Manifest read_manifest(const std::string& path) {
  const std::string text = read_checkpoint_file(path, "manifest", kMaxManifestBytes);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(cat("[checkpoint] ", path, " is not valid JSON (", e.what(), "): the manifest is damaged"));
  }
  return from_json(j, path);
}

}  // namespace zero::checkpoint
