#include "checkpoint/loader.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>

#include "checkpoint/reshard.h"
#include "checkpoint/shard_file.h"

namespace zero::checkpoint {
namespace fs = std::filesystem;

void check_same_model(const Manifest& m, const FlatLayout& layout, const std::string& path) {
  const Manifest now = describe_layout(layout);
  if (m.layout_fingerprint == now.layout_fingerprint && m.units.size() == now.units.size()) return;
  std::string diff;
  if (m.units.size() != now.units.size()) diff = cat(m.units.size(), " units, the model now ", now.units.size());
  for (std::size_t i = 0; diff.empty() && i < std::min(m.parameters.size(), now.parameters.size()); ++i) {
    const auto &a = m.parameters[i], &b = now.parameters[i];
    if (a.at("name") != b.at("name") || a.at("shape") != b.at("shape")) {
      diff = cat("parameter ", i, " is ", a.at("name").dump(), " of shape ", a.at("shape").dump(), ", the model's is ",
                 b.at("name").dump(), " of shape ", b.at("shape").dump());
    }
  }
  if (diff.empty()) diff = cat(m.parameters.size(), " parameters, the model now ", now.parameters.size());
  const std::string model = m.info.contains("model") ? cat(" (model ", m.info["model"].dump(), ")") : "";
  throw CheckpointError(cat("[checkpoint] ", path, " holds another model", model, ": ", diff,
                            ". Build the same model shape as the run that saved it"));
}

std::vector<std::string> gather_strings(Communicator& comm, const std::string& mine) {
  const std::uint64_t size = mine.size();
  std::vector<std::uint64_t> sizes(comm.size());
  comm.all_gather_bytes(&size, sizeof size, sizes.data());
  const std::uint64_t longest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<std::string> out(comm.size());
  if (longest == 0) return out;
  std::string padded = mine;
  padded.resize(longest, '\0');
  std::string all(longest * comm.size(), '\0');
  comm.all_gather_bytes(padded.data(), longest, all.data());
  for (int r = 0; r < comm.size(); ++r) out[r] = all.substr(r * longest, sizes[r]);
  return out;
}

void agree_on_errors(Communicator& comm, const std::string& my_error) {
  for (const std::string& e : gather_strings(comm, my_error))
    if (!e.empty()) throw CheckpointError(e);
}

nlohmann::json zenflow_options_json(const ZenflowOptions& z) {
  return {{"topk_ratio", z.topk_ratio}, {"select_interval", z.select_interval}, {"update_interval", z.update_interval},
          {"full_warm_up_rounds", z.full_warm_up_rounds}, {"overlap_step", z.overlap_step}};
}

void check_zenflow_fits(const Manifest& m, const EngineSettings& settings, int world_size, const std::string& path) {
  if (m.zenflow.is_null()) return;
  const std::string what = cat("[checkpoint] ", path, " holds a ZenFlow run's state (zero_optimization.zenflow: the device's columns and their "
                               "moments, the gradients summed for the CPU's next update), ");
  if (!settings.offload.zenflow.enabled) {
    throw CheckpointError(cat(what, "which a run without ZenFlow cannot continue: resume with the zenflow section it was saved with ",
                              m.zenflow.value("options", nlohmann::json()).dump()));
  }
  const int stage = m.info.value("stage", settings.stage);
  if (m.world_size != world_size || stage != settings.stage) {
    throw CheckpointError(cat(what, "saved by ", m.world_size, " ranks at stage ", stage, "; this run has ", world_size, " at stage ",
                              settings.stage, ". That state is each rank's own and does not reshard: resume with ", m.world_size,
                              " ranks at stage ", stage));
  }
  const nlohmann::json now = zenflow_options_json(settings.offload.zenflow), then = m.zenflow.value("options", now);
  if (then != now) {
    throw CheckpointError(cat(what, "saved with zenflow ", then.dump(), "; this run's is ", now.dump(),
                              ": resume with the zenflow section it was saved with"));
  }
}

namespace {

// This rank's held state of every unit, tensor by tensor, read piece by piece from the old files.
// `tensors`: how many of the manifest's (the parameters in use are left out when the engine
// cannot hold the delayed update in flight).
LoadStats read_into(Engine& engine, const std::string& dir, const Manifest& m, int tensors) {
  std::map<int, std::unique_ptr<ShardReader>> readers;  // only the files this rank needs
  auto reader = [&](int rank) -> ShardReader& {
    auto& r = readers[rank];
    if (!r) r = std::make_unique<ShardReader>((fs::path(dir) / m.files[rank].name).string(), m.files[rank], m.block_bytes);
    return *r;
  };
  std::vector<float> buf;
  for (int u = 0; u < engine.layout().num_units(); ++u) {
    const Engine::HeldRange held = engine.held_state(u);
    const std::vector<Piece> pieces = pieces_of(m.units[u], held.first, held.count);
    for (int t = 0; t < tensors; ++t) {
      buf.assign(held.count, 0.0f);  // padding reads as zero
      for (const Piece& p : pieces) {
        reader(p.rank).read(m.tensor_byte(u, t) + sizeof(float) * p.source, sizeof(float) * p.count, buf.data() + p.dest);
      }
      engine.write_state(static_cast<StateTensor>(t), u, held.first, buf);
    }
  }
  LoadStats stats;
  for (const auto& [rank, r] : readers) stats.bytes_read += r->bytes_read();
  return stats;
}

}  // namespace

LoadStats load_checkpoint(Engine& engine, const std::string& dir, const Manifest& m, Communicator& comm) {
  const auto t0 = std::chrono::steady_clock::now();
  LoadStats stats;
  EngineCounters counters = counters_of(m);
  // Without a delayed update to hold it, a pending one is applied: the next forward uses the masters.
  if (counters.update_in_flight && !engine.holds_update_in_flight(m.step)) counters.update_in_flight = false;
  std::string error;
  try {
    check_same_model(m, engine.layout(), (fs::path(dir) / "manifest.json").string());
    check_zenflow_fits(m, engine.config(), engine.layout().world_size(), (fs::path(dir) / "manifest.json").string());
    const int tensors = counters.zenflow ? kNumZenflowTensors : counters.update_in_flight ? kNumStateTensors + 1 : kNumStateTensors;
    stats = read_into(engine, dir, m, tensors);
    stats.applied_pending_update = m.tensors.size() == kNumStateTensors + 1u && !counters.update_in_flight;
  } catch (const Error& e) {
    error = e.what();
  }
  agree_on_errors(comm, error);  // before any rank uses what it read
  engine.state_written(counters);
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return stats;
}

}  // namespace zero::checkpoint
