#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "fuzz/fuzz_guard.h"

namespace zero::fuzz {

std::string scratch_file(const std::string& name, const void* bytes, std::size_t size) {
  namespace fs = std::filesystem;
  // One directory per process (libFuzzer's fork mode runs several), removed at exit; under
  // ZERO_FUZZ_SCRATCH when set (scripts/fuzz.sh points it into its build directory).
  struct Dir {
    fs::path path;
    Dir() {
      const char* env = std::getenv("ZERO_FUZZ_SCRATCH");
      const fs::path base = env ? fs::path(env) : fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
      path = base / ("zero-fuzz-" + std::to_string(::getpid()));
      fs::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Dir dir;
  const fs::path path = dir.path / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "zero-fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path.string();
}

}  // namespace zero::fuzz
