#include "checkpoint/hf_export.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "checkpoint/directory.h"
#include "common/output_file.h"

namespace zero::checkpoint {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void fail(const std::string& out_dir, const std::string& what) {
  throw CheckpointError(cat("[output] --out ", out_dir, " ", what));
}

// OUTDIR as an absolute path with its existing part's symlinks resolved (the directory renamed
// over is then the one the path names, not a link to it).
fs::path resolved_directory(const std::string& out_dir) {
  std::string p = out_dir;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(p, ec), ec);
  if (ec) fail(out_dir, cat("cannot be examined: ", ec.message()));
  return abs;
}

void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {  // a rename or a new entry reaches the disk
    ::fsync(fd);
    ::close(fd);
  }
}

// The sibling directory the files are written into, renamed to OUTDIR by publish() and removed
// unless published.
class StagingDirectory {
 public:
  StagingDirectory(std::string out_dir, fs::path target) : out_dir_(std::move(out_dir)), target_(std::move(target)) {
    for (int n = 0;; ++n) {
      path_ = target_.parent_path() / cat(".", target_.filename().string(), ".zero-export-", ::getpid(), "-", n);
      if (::mkdir(path_.c_str(), 0777) == 0) return;  // the umask's mode, as OUTDIR's own mkdir would give
      if (errno != EEXIST || n > 1000) fail(out_dir_, cat("cannot be written: creating ", path_.string(), " failed (", std::strerror(errno), ")"));
    }
  }
  ~StagingDirectory() {
    std::error_code ec;
    if (!published_) fs::remove_all(path_, ec);
  }
  StagingDirectory(const StagingDirectory&) = delete;
  StagingDirectory& operator=(const StagingDirectory&) = delete;

  const fs::path& path() const { return path_; }
  void publish() {
    sync_directory(path_);
    if (::rename(path_.c_str(), target_.c_str()) != 0) {  // replaces an empty directory, never a full one
      fail(out_dir_, cat("could not be published: renaming ", path_.string(), " to it failed (", std::strerror(errno),
                         errno == ENOTEMPTY || errno == EEXIST ? "; something was written into it meanwhile" : "", ")"));
    }
    published_ = true;
    sync_directory(target_.parent_path());
  }

 private:
  std::string out_dir_;
  fs::path target_, path_;
  bool published_ = false;
};

std::string shard_name(int i, int n) {
  if (n == 1) return "model.safetensors";
  char name[64];
  std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", i + 1, n);
  return name;
}

}  // namespace

std::vector<int> shard_of_tensors(const std::vector<std::uint64_t>& tensor_bytes, std::uint64_t max_shard_bytes) {
  std::vector<int> shard(tensor_bytes.size());
  int current = -1;
  std::uint64_t filled = 0;  // bytes in the current shard
  bool open = false;         // the current shard takes more tensors
  for (std::size_t i = 0; i < tensor_bytes.size(); ++i) {
    const std::uint64_t b = tensor_bytes[i];
    if (!open || filled + b > max_shard_bytes) {
      ++current;
      filled = 0;
    }
    shard[i] = current;
    filled += b;
    open = b <= max_shard_bytes;  // an oversized tensor's shard is closed: it stays alone
  }
  return shard;
}

void check_hf_directory(const std::string& out_dir) {
  if (out_dir.empty()) fail(out_dir, "is an empty path: name a new directory");
  check_outside_checkpoints("--out", out_dir);  // first: there, even an empty directory would be pruned with its step
  const fs::path target = resolved_directory(out_dir);
  std::error_code ec;
  const fs::file_status st = fs::status(target, ec);
  if (!fs::exists(st) && fs::is_symlink(fs::symlink_status(target, ec))) {
    fail(out_dir, "is a symbolic link to nothing: remove the link, or name a new directory");
  }
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) {
      fail(out_dir, "exists and is not a directory: name a new directory for the Hugging Face files, or a FILE.safetensors "
                    "for the weights alone");
    }
    if (!fs::is_empty(target, ec) || ec) {
      fail(out_dir, "is a directory that is not empty: zero writes a Hugging Face directory whole, into a new or empty "
                    "directory; name one (nothing in it was changed)");
    }
  }
  if (!fs::is_directory(target.parent_path(), ec)) {
    fail(out_dir, cat("cannot be created: its parent ", target.parent_path().string(), " is not a directory; create it first"));
  }
}

HfDirectoryStats export_hf_directory(ParameterReader& reader, const std::string& out_dir, bool bf16, std::uint64_t max_shard_bytes,
                                     const std::vector<HfFile>& files) {
  check_hf_directory(out_dir);
  const std::vector<ExportTensor> tensors = export_tensors(reader, bf16);
  std::vector<std::uint64_t> sizes;
  for (const ExportTensor& t : tensors) sizes.push_back(t.bytes);
  const std::vector<int> shard = shard_of_tensors(sizes, max_shard_bytes);
  HfDirectoryStats stats;
  stats.tensors = static_cast<int>(tensors.size());
  stats.shards = shard.empty() ? 0 : shard.back() + 1;
  StagingDirectory staging(out_dir, resolved_directory(out_dir));
  const auto output = [&](const std::string& name) { return NamedPath{"--out's file", (staging.path() / name).string()}; };
  for (const HfFile& f : files) {
    write_output_file(output(f.name), f.bytes);
    stats.files.emplace_back(f.name, f.bytes.size());
  }
  nlohmann::json weight_map = nlohmann::json::object();
  for (std::size_t first = 0; first < tensors.size();) {
    std::size_t last = first;
    while (last < tensors.size() && shard[last] == shard[first]) ++last;
    const std::string name = shard_name(shard[first], stats.shards);
    OutputFile w(output(name));
    stats.files.emplace_back(name, write_safetensors(reader, tensors, first, last, bf16, w));
    w.commit();
    for (std::size_t i = first; i < last; ++i) {
      weight_map[tensors[i].hf.name] = name;
      stats.total_size += tensors[i].bytes;
    }
    first = last;
  }
  if (stats.shards > 1) {
    const nlohmann::json index = {{"metadata", {{"total_size", stats.total_size}}}, {"weight_map", weight_map}};
    const std::string text = index.dump(2) + "\n";
    write_output_file(output("model.safetensors.index.json"), text);
    stats.files.emplace_back("model.safetensors.index.json", text.size());
  }
  staging.publish();
  return stats;
}

}  // namespace zero::checkpoint
