// `zero bench io`: sequential write and read bandwidth of the NVMe tier's I/O path (src/io/:
// io_uring, O_DIRECT, block_size requests with queue_depth in flight) on a folder, beside what
// fio measures on the same folder with the same block size, queue depth and engine in the same
// run. Each figure is the median of --rounds passes over a file of --size bytes; the files are
// removed afterwards. Every byte read back is compared with what was written.
#include "cli/bench_io.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "io/async_file.h"
#include "io/swap_folder.h"
#include "memory/ledger.h"
#include "planner/byte_size.h"

namespace zero::cli {
namespace {

struct Figures {
  double write = 0, read = 0;  // bytes/s
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// src/io's figures: one request of `size` bytes, cut into block_size chunks, queue_depth in flight.
Figures measure_zero(const std::string& file, std::uint64_t size, const io::IoOptions& o, int rounds, bool& direct) {
  auto free_aligned = [](char* p) { std::free(p); };
  std::unique_ptr<char, decltype(free_aligned)> out(static_cast<char*>(std::aligned_alloc(io::kDirectAlignment, size)), free_aligned);
  std::unique_ptr<char, decltype(free_aligned)> in(static_cast<char*>(std::aligned_alloc(io::kDirectAlignment, size)), free_aligned);
  if (!out || !in) throw OutOfMemoryError(cat("[bench] cannot allocate 2 x ", format_bytes(size), " of buffers: give a smaller --size"));
  for (std::uint64_t i = 0; i < size; ++i) out.get()[i] = static_cast<char>(i * 2654435761u >> 13);
  io::AsyncFile f(file, o, true);
  direct = f.direct();
  std::vector<double> writes, reads;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f.wait(f.write(0, out.get(), size));
    writes.push_back(static_cast<double>(size) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::memset(in.get(), 0, size);
    t0 = std::chrono::steady_clock::now();
    f.wait(f.read(0, in.get(), size));
    reads.push_back(static_cast<double>(size) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (std::memcmp(in.get(), out.get(), size) != 0) throw Error(cat("[bench] ", file, ": the bytes read back differ from those written"));
  }
  return {median(writes), median(reads)};
}

// fio's bandwidth (bytes/s) of one sequential pass, read or write, or a negative number if fio
// could not run (its message is printed).
double run_fio(const std::string& dir, const std::string& name, std::uint64_t size, const io::IoOptions& o, bool direct, const char* rw) {
  const std::string command = cat("fio --name=zero-bench --directory='", dir, "' --filename='", name, "' --size=", size, " --bs=", o.block_size,
                                  " --iodepth=", o.queue_depth, " --ioengine=io_uring --direct=", direct ? 1 : 0, " --rw=", rw,
                                  " --output-format=json 2>&1");
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) text.append(buf, n);
  const int status = ::pclose(pipe);
  const auto brace = text.find('{');
  if (status != 0 || brace == std::string::npos) {
    std::printf("  fio failed (%s): %s\n", command.c_str(), text.substr(0, 300).c_str());
    return -1;
  }
  const nlohmann::json j = nlohmann::json::parse(text.substr(brace), nullptr, false);
  if (j.is_discarded() || !j.contains("jobs") || j["jobs"].empty()) return -1;
  return j["jobs"][0][std::string(rw) == "write" ? "write" : "read"].value("bw_bytes", -1.0);
}

Figures measure_fio(const std::string& dir, std::uint64_t size, const io::IoOptions& o, bool direct, int rounds) {
  const std::string name = cat("zero-bench-fio-", ::getpid());
  std::vector<double> writes, reads;
  for (int r = 0; r < rounds; ++r) {
    writes.push_back(run_fio(dir, name, size, o, direct, "write"));
    reads.push_back(run_fio(dir, name, size, o, direct, "read"));
  }
  std::filesystem::remove(std::filesystem::path(dir) / name);
  return {median(writes), median(reads)};
}

}  // namespace

std::vector<FlagSpec> bench_io_flags() {
  return {{"dir", "the folder to measure (nvme_path): a file of --size bytes is written and read there, then removed", true, ""},
          {"size", "bytes per pass (1GiB, 256MiB)", true, "256MiB"},
          {"block-size", "bytes per request (aio.block_size)", true, "1MiB"},
          {"queue-depth", "requests in flight (aio.queue_depth)", true, "8"},
          {"rounds", "passes of each; the median counts", true, "3"},
          {"fio", "also run fio on the same folder with the same settings: auto (if fio is on PATH), yes or no", true, "auto"}};
}

int bench_io_main(const std::vector<std::string>& args) {
  Flags flags("zero bench io", bench_io_flags(), args);
  if (flags.help()) {
    std::printf("Sequential write and read bandwidth of the NVMe tier's I/O (io_uring, O_DIRECT) on a folder, beside\n"
                "fio's on the same folder, block size and queue depth.\n\n%s", flags.usage().c_str());
    return 0;
  }
  if (!flags.has("dir")) throw ConfigError("[bench] zero bench io needs --dir: the folder to measure (the nvme_path to be)");
  const std::string dir = flags.get("dir");
  io::check_nvme_path(dir);
  const std::uint64_t size = parse_byte_size(flags.get("size"), "--size");
  io::IoOptions o;
  o.block_size = parse_byte_size(flags.get("block-size"), "--block-size");
  o.queue_depth = static_cast<int>(flags.get_int("queue-depth", 1, 4096));
  const int rounds = static_cast<int>(flags.get_int("rounds", 1, 1000));
  if (size < io::kDirectAlignment || size % io::kDirectAlignment != 0)
    throw ConfigError(cat("[bench] --size must be a positive multiple of ", io::kDirectAlignment, " bytes, not ", size));
  if (o.block_size % io::kDirectAlignment != 0)
    throw ConfigError(cat("[bench] --block-size must be a multiple of ", io::kDirectAlignment, " bytes (O_DIRECT), not ", o.block_size));
  const std::string fio = flags.get("fio");
  if (fio != "auto" && fio != "yes" && fio != "no") throw ConfigError(cat("[bench] --fio must be auto, yes or no, not '", fio, "'"));
  const bool with_fio = fio == "yes" || (fio == "auto" && std::system("command -v fio >/dev/null 2>&1") == 0);

  const std::string file = (std::filesystem::path(dir) / cat("zero-bench-io-", ::getpid())).string();
  bool direct = false;
  Figures z;
  try {
    z = measure_zero(file, size, o, rounds, direct);
  } catch (...) {
    std::filesystem::remove(file);
    throw;
  }
  std::filesystem::remove(file);
  std::printf("zero bench io: %s, %s a pass, block %s, queue depth %d, %s, median of %d\n", dir.c_str(), format_bytes(size).c_str(),
              format_bytes(o.block_size).c_str(), o.queue_depth, direct ? "O_DIRECT" : "buffered (no O_DIRECT here)", rounds);
  std::printf("%-22s %12s %12s\n", "", "write GB/s", "read GB/s");
  std::printf("%-22s %12.3f %12.3f\n", "zero (src/io)", z.write / 1e9, z.read / 1e9);
  if (!with_fio) return 0;
  const Figures f = measure_fio(dir, size, o, direct, rounds);
  if (f.write <= 0 || f.read <= 0) {
    std::printf("%-22s %12s %12s\n", "fio (io_uring)", "failed", "failed");
    return 1;
  }
  std::printf("%-22s %12.3f %12.3f\n", "fio (io_uring)", f.write / 1e9, f.read / 1e9);
  std::printf("%-22s %12.2f %12.2f\n", "zero / fio", z.write / f.write, z.read / f.read);
  return 0;
}

}  // namespace zero::cli
