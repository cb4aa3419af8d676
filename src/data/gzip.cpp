#include "data/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <memory>

#include "common/error.h"

namespace zero::data {
namespace {

// RAII for the zlib stream; 16 + MAX_WBITS asks inflate for the gzip wrapper.
struct Inflater {
  z_stream stream{};
  Inflater() {
    if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) throw Error("[data] zlib cannot start a gzip stream");
  }
  ~Inflater() { inflateEnd(&stream); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
};

}  // namespace

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(std::string_view bytes, const std::string& name, std::uint64_t max_bytes) {
  Inflater inflater;
  z_stream& z = inflater.stream;
  std::size_t fed = 0;  // bytes of `bytes` handed to zlib so far, in pieces its uInt counts can hold
  const auto feed = [&] {
    if (z.avail_in > 0 || fed == bytes.size()) return;
    const std::size_t n = std::min<std::size_t>(bytes.size() - fed, std::size_t{1} << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + fed));  // zlib does not write it
    z.avail_in = static_cast<uInt>(n);
    fed += n;
  };
  std::string out;
  constexpr std::size_t kChunk = 1 << 20;
  std::unique_ptr<char[]> chunk(new char[kChunk]);
  while (true) {
    feed();
    z.next_out = reinterpret_cast<Bytef*>(chunk.get());
    z.avail_out = static_cast<uInt>(kChunk);
    const int rc = inflate(&z, Z_NO_FLUSH);
    out.append(chunk.get(), kChunk - z.avail_out);
    if (out.size() > max_bytes) {
      throw Error(cat("[data] ", name, " decompresses to more than ", max_bytes,
                      " bytes, more than zero reads from one data file: split the data into smaller files"));
    }
    const bool input_left = z.avail_in > 0 || fed < bytes.size();
    if (rc == Z_STREAM_END) {
      if (!input_left) return out;
      inflateReset(&z);  // another gzip member follows
      continue;
    }
    if (rc == Z_OK || (rc == Z_BUF_ERROR && input_left)) continue;
    if (rc == Z_BUF_ERROR) {
      throw Error(cat("[data] ", name, " is a truncated gzip file (it ends mid-stream); re-create or re-download it"));
    }
    throw Error(cat("[data] ", name, " is a damaged gzip file (zlib: ", z.msg ? z.msg : "error", ", code ", rc,
                    "); re-create or re-download it"));
  }
}

}  // namespace zero::data
