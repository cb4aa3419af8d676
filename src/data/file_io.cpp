#include "data/file_io.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "common/error.h"

namespace zero::data {

std::string read_file_bytes(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw Error(cat("[data] ", path, " does not exist: check the path of the data file"));
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(cat("[data] ", path, " is a directory: pass a text file or an llm.c .bin token file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat("[data] cannot open ", path, ": ", std::strerror(errno)));
  std::string bytes;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) bytes.reserve(static_cast<std::size_t>(size));
  bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(cat("[data] cannot read ", path, ": ", std::strerror(errno)));
  return bytes;
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(cat("[data] cannot create ", partial, ": ", std::strerror(errno)));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      const std::string reason = std::strerror(errno);
      out.close();
      std::error_code ec;
      std::filesystem::remove(partial, ec);
      throw Error(cat("[data] cannot write ", path, ": ", reason, "; check the disk space"));
    }
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    const std::string reason = ec.message();
    std::filesystem::remove(partial, ec);
    throw Error(cat("[data] cannot move ", partial, " to ", path, ": ", reason));
  }
}

}  // namespace zero::data
