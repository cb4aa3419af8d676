// libFuzzer harness: a whole checkpoint directory, file types as well as contents. The input
// builds DIR/latest, DIR/step-00000001/manifest.json and its rank-00000-of-00001.bin, each of a
// type the input picks (a regular file, absent, a FIFO, a directory, a symlink to a device, a
// symlink to a regular file elsewhere, a dangling symlink, a symlink loop), and then every reader
// a command uses runs on it: find_checkpoint and the manifest (train --resume, ckpt inspect,
// export, eval, generate), every rank file's blocks and every parameter (inspect, export,
// eval), and what --save checks at start-up (`latest`, the directory's history). A refusal must
// be a zero::Error; a hang (a FIFO opened for reading), unbounded memory (/dev/zero read whole)
// or any other exception is a crash. Input layout: three type bytes, one length byte L, L bytes
// of `latest`, a 4-byte little-endian manifest length M, M bytes of manifest, the rank file.
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "checkpoint/directory.h"
#include "checkpoint/export.h"
#include "fuzz/fuzz_guard.h"

namespace {
namespace fs = std::filesystem;

enum Kind { kRegular, kAbsent, kFifo, kDirectory, kDevice, kLinkToRegular, kDangling, kLoop, kKinds };

void make(const fs::path& path, int kind, const std::string& bytes) {
  std::error_code ec;
  switch (kind % kKinds) {
    case kRegular: std::ofstream(path, std::ios::binary) << bytes; break;
    case kAbsent: break;
    case kFifo: ::mkfifo(path.c_str(), 0644); break;
    case kDirectory: fs::create_directory(path, ec); break;
    case kDevice: fs::create_symlink("/dev/zero", path, ec); break;
    case kLinkToRegular: {
      const fs::path elsewhere = path.parent_path().parent_path() / (path.filename().string() + ".elsewhere");
      std::ofstream(elsewhere, std::ios::binary) << bytes;
      fs::create_symlink(fs::absolute(elsewhere), path, ec);
      break;
    }
    case kDangling: fs::create_symlink(path.string() + ".none", path, ec); break;
    case kLoop: fs::create_symlink(path.filename(), path, ec); break;
  }
}

// The parts of the input, each cut to what is there.
struct Parts {
  int kinds[3] = {};
  std::string latest, manifest, rank;
};

Parts split(const std::uint8_t* data, std::size_t size) {
  Parts p;
  std::size_t at = 0;
  const auto take = [&](std::size_t n) {
    n = std::min(n, size - at);
    std::string s(reinterpret_cast<const char*>(data) + at, n);
    at += n;
    return s;
  };
  for (int& k : p.kinds) k = at < size ? data[at++] : 0;
  p.latest = take(at < size ? data[at++] : 0);
  std::size_t m = 0;
  for (int b = 0; b < 4; ++b) m |= static_cast<std::size_t>(at < size ? data[at++] : 0) << (8 * b);
  p.manifest = take(m);
  p.rank = take(size - at);
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zero;
  const Parts parts = split(data, size);
  static const fs::path root = fs::path(fuzz::scratch_file("checkpoint.seed", "", 0)).parent_path();
  const fs::path top = root / "run", dir = top / "ck", step = dir / "step-00000001";
  std::error_code ec;
  fs::remove_all(top, ec);
  fs::create_directories(step);
  make(dir / "latest", parts.kinds[0], parts.latest);
  make(step / "manifest.json", parts.kinds[1], parts.manifest);
  make(step / "rank-00000-of-00001.bin", parts.kinds[2], parts.rank);
  fuzz::expect_only_zero_errors("checkpoint: readers", [&] {
    const std::string found = checkpoint::find_checkpoint(dir.string());
    checkpoint::ParameterReader reader(found, checkpoint::read_manifest(found + "/manifest.json"));
    reader.verify_all();
    (void)reader.read_all();
  });
  fuzz::expect_only_zero_errors("checkpoint: --save", [&] {
    (void)checkpoint::check_history(dir.string(), "");
    (void)checkpoint::check_history(dir.string(), step.string());
  });
  fuzz::expect_only_zero_errors("checkpoint: export --out", [&] {
    checkpoint::check_outside_checkpoints("--out", (dir / "latest").string());
  });
  return 0;
}
