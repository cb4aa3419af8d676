#include "checkpoint/saver.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>

#include <unistd.h>

#include "checkpoint/loader.h"
#include "checkpoint/shard_file.h"

namespace zero::checkpoint {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Saver::Pending {
  Manifest manifest;
  std::string dir;
  std::thread writer;
  std::atomic<bool> done{false};
  FileRecord record;   // this rank's, once done
  std::string error;   // the write's failure, once done
  double write_seconds = 0;
  ~Pending() {
    if (writer.joinable()) writer.join();
  }
};

std::string check_save_directory(const std::string& dir, int rank, const std::string& resumed) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    return cat("[checkpoint] cannot use --save ", dir, ": ", ec ? ec.message() : "it is not a directory",
               ". Give a directory that can be created and written");
  }
  // Unique to this process: the launching process and every rank (on any host sharing the
  // directory) each probe at start-up, possibly at the same moment.
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const std::string probe = (fs::path(dir) / cat(".zero-write-test-", host, "-", ::getpid(), "-rank-", rank)).string();
  try {
    write_file_durably(probe, "ok");
  } catch (const Error& e) {
    return cat("[checkpoint] cannot write checkpoints into ", dir, ": ", e.what());
  }
  fs::remove(probe, ec);
  try {
    return check_history(dir, resumed);
  } catch (const Error& e) {  // a `latest` that cannot be read
    return e.what();
  }
}

Saver::Saver(SaveOptions options, Communicator& comm) : options_(std::move(options)), comm_(comm) {
  std::string error;
  if (comm_.rank() == 0) {
    try {
      lock_ = lock_save_directory(options_.dir);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  if (error.empty()) error = check_save_directory(options_.dir, comm_.rank(), options_.resumed);
  agree_on_errors(comm_, error);
  if (!options_.resumed.empty()) continues_step_ = own_step(options_.dir, options_.resumed);
}

Saver::~Saver() = default;

namespace {

// A checkpoint holds one copy of the state, a file per rank; with hybrid sharding every group
// holds a copy. zero train refuses the combination before any rank starts; this is the library's.
void refuse_hybrid(const FlatLayout& layout) {
  if (layout.shard_size() == layout.world_size()) return;
  throw CheckpointError(cat("[checkpoint] checkpoints of hybrid sharding (shard groups of ", layout.shard_size(), " of ", layout.world_size(),
                            " ranks: zero_optimization.mics_shard_size) are not supported yet: train without them, or without mics_shard_size"));
}

}  // namespace

SaveStarted Saver::save(Engine& engine, std::int64_t step, nlohmann::json info) {
  refuse_hybrid(engine.layout());
  const auto t0 = Clock::now();
  if (pending_) poll(true);
  const std::string dir = (fs::path(options_.dir) / step_dir_name(step)).string();
  std::string error;
  started_.push_back(step);
  if (comm_.rank() == 0) {  // a stale directory of this step (a killed run) is never `latest`
    try {
      if (read_latest(options_.dir) == step_dir_name(step)) {  // the lock and check_history keep other runs out
        error = cat("[checkpoint] ", options_.dir, "/latest names ", step_dir_name(step), ", the step this run is about to save: ",
                    "something else wrote into the directory during the run. Nothing was overwritten; save to another directory");
      }
    } catch (const Error& e) {
      error = e.what();
    }
    std::error_code ec;
    if (error.empty()) fs::remove_all(dir, ec);
    if (ec) error = cat("[checkpoint] cannot remove the stale ", dir, ": ", ec.message());
  }
  agree_on_errors(comm_, error);  // nobody writes before the stale directory is gone
  std::error_code ec;
  fs::create_directories(dir, ec);
  agree_on_errors(comm_, ec ? cat("[checkpoint] cannot create ", dir, ": ", ec.message()) : "");

  const EngineCounters counters = engine.counters();  // the delayed update stays in flight, as in a run that saves nothing
  ZERO_CHECK(counters.steps_done == step, "saving step ", step, " of an engine at step ", counters.steps_done);
  auto p = std::make_unique<Pending>();
  p->dir = dir;
  p->manifest = describe_layout(engine.layout());
  record_counters(p->manifest, counters);
  if (counters.zenflow) p->manifest.zenflow["options"] = zenflow_options_json(engine.config().offload.zenflow);
  p->manifest.block_bytes = options_.block_bytes;
  p->manifest.info = std::move(info);
  const FlatLayout& layout = engine.layout();
  const int tensors = static_cast<int>(p->manifest.tensors.size());
  const std::size_t numel = tensors * layout.shard_numel();
  if (snapshot_size_ != numel) {
    snapshot_.reset(new float[numel]);  // default-initialised: no zero-fill pass
    snapshot_size_ = numel;
  }
  for (int u = 0; u < layout.num_units(); ++u) {
    const UnitPlace& unit = layout.unit(u);
    for (int t = 0; t < tensors; ++t) {
      const std::span<float> out(snapshot_.get() + p->manifest.tensor_byte(u, t) / sizeof(float), unit.slice);
      engine.read_state(static_cast<StateTensor>(t), u, layout.slice_offset(u, comm_.rank()), out);
    }
  }
  SaveStarted started{step, 0, snapshot_size_ * sizeof(float)};
  started.stall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  const std::string path = (fs::path(dir) / rank_file_name(comm_.rank(), comm_.size())).string();
  Pending* q = p.get();
  const int rank = comm_.rank();
  const std::uint64_t block = options_.block_bytes;
  p->writer = std::thread([this, q, path, rank, step, block] {
    const auto w0 = Clock::now();
    try {
      ShardWriter w(path, block);
      const std::size_t bytes = snapshot_size_ * sizeof(float), half = bytes / 2;
      const auto* data = reinterpret_cast<const unsigned char*>(snapshot_.get());
      w.append(data, half);
      if (rank == 0) maybe_kill("rank-file", step);
      w.append(data + half, bytes - half);
      q->record = w.finish();
    } catch (const std::exception& e) {
      q->error = cat("[checkpoint] rank ", rank, " could not write ", path, ": ", e.what());
    }
    q->write_seconds = std::chrono::duration<double>(Clock::now() - w0).count();
    q->done = true;
  });
  pending_ = std::move(p);
  return started;
}

std::optional<Published> Saver::poll(bool wait) {
  const std::uint8_t mine = !pending_ ? 0 : (wait || pending_->done) ? 2 : 1;
  std::vector<std::uint8_t> all(comm_.size());
  comm_.all_gather_bytes(&mine, 1, all.data());
  for (std::uint8_t c : all) ZERO_CHECK((c == 0) == (mine == 0), "ranks disagree on a pending checkpoint");
  if (mine == 0 || std::find(all.begin(), all.end(), 1) != all.end()) return std::nullopt;
  pending_->writer.join();
  std::string error = pending_->error;
  if (!error.empty()) error += ". The previous checkpoint, if any, is still good and `latest` names it";
  try {
    agree_on_errors(comm_, error);
  } catch (...) {
    pending_.reset();
    throw;
  }
  Published out = publish();
  pending_.reset();
  return out;
}

// Every rank's file record goes to rank 0, which writes the manifest and then `latest`.
Published Saver::publish() {
  Pending& p = *pending_;
  const nlohmann::json mine = {{"name", p.record.name}, {"bytes", p.record.bytes}, {"crc32", p.record.crc32},
                               {"block_crc32", p.record.block_crc32}, {"seconds", p.write_seconds}};
  const std::vector<std::string> records = gather_strings(comm_, mine.dump());
  Published out{p.manifest.step, p.dir, 0, 0, {}};
  std::string error;
  if (comm_.rank() == 0) {
    try {
      for (const std::string& text : records) {
        const nlohmann::json r = nlohmann::json::parse(text);
        p.manifest.files.push_back({r["name"], r["bytes"], r["crc32"], r["block_crc32"].get<std::vector<std::uint32_t>>()});
        out.write_seconds = std::max(out.write_seconds, r["seconds"].get<double>());
        out.bytes += r["bytes"].get<std::uint64_t>();
      }
      p.manifest.world_size = comm_.size();
      write_file_durably((fs::path(p.dir) / "manifest.json").string(), to_json(p.manifest).dump(1));
      maybe_kill("before-latest", p.manifest.step);
      write_file_durably((fs::path(options_.dir) / "latest").string(), step_dir_name(p.manifest.step) + "\n");
      out.warnings = prune();
    } catch (const Error& e) {
      error = cat("[checkpoint] publishing ", p.dir, " failed: ", e.what());
    }
  }
  agree_on_errors(comm_, error);
  return out;
}

bool Saver::ours(std::int64_t step) const {
  return step <= continues_step_ || std::find(started_.begin(), started_.end(), step) != started_.end();
}

// Keeps the newest `keep` complete checkpoints, and removes incomplete ones older than `latest`;
// only this run's history (ours()): a checkpoint another run wrote is never removed. What cannot
// be removed (an immutable file, permissions) is a warning: the new checkpoint is published.
std::vector<std::string> Saver::prune() {
  std::vector<std::string> warnings;
  const std::int64_t latest = step_of(read_latest(options_.dir));
  const auto remove = [&](const fs::path& step_dir, const char* what) {
    std::error_code ec;
    fs::remove(step_dir / "manifest.json", ec);  // first: a step left half-removed is no checkpoint
    ec.clear();
    fs::remove_all(step_dir, ec);
    if (ec) {
      warnings.push_back(cat("[checkpoint] warning: cannot remove the ", what, " ", step_dir.string(), ": ", ec.message(),
                             ". Training goes on; remove it yourself"));
    }
  };
  std::vector<std::pair<std::int64_t, fs::path>> complete;
  std::error_code ec;
  for (fs::directory_iterator it(options_.dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::int64_t s = step_of(it->path().filename().string());
    std::error_code type_ec;
    if (s < 0 || !it->is_directory(type_ec) || !ours(s)) continue;
    if (fs::exists(it->path() / "manifest.json", type_ec)) {
      complete.push_back({s, it->path()});
    } else if (s < latest) {
      remove(it->path(), "incomplete checkpoint");
    }
  }
  std::sort(complete.begin(), complete.end());
  if (options_.keep <= 0) return warnings;
  const std::string old = cat("checkpoint older than the newest ", options_.keep, " (--keep)");
  for (std::size_t i = 0; i + static_cast<std::size_t>(options_.keep) < complete.size(); ++i) {
    if (complete[i].first != latest) remove(complete[i].second, old.c_str());
  }
  return warnings;
}

}  // namespace zero::checkpoint
