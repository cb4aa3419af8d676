#include "data/gzip.h"

#include <zlib.h>

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

std::string gunzip(std::string_view bytes, const std::string& name) {
  Inflater inflater;
  z_stream& z = inflater.stream;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));  // zlib does not write it
  z.avail_in = static_cast<uInt>(bytes.size());  // data files are far below 4 GiB compressed
  ZERO_CHECK(bytes.size() == z.avail_in, "gzip input of ", bytes.size(), " bytes is too large for one call");
  std::string out;
  constexpr std::size_t kChunk = 1 << 20;
  std::unique_ptr<char[]> chunk(new char[kChunk]);
  while (true) {
    z.next_out = reinterpret_cast<Bytef*>(chunk.get());
    z.avail_out = static_cast<uInt>(kChunk);
    const int rc = inflate(&z, Z_NO_FLUSH);
    out.append(chunk.get(), kChunk - z.avail_out);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) return out;
      inflateReset(&z);  // another gzip member follows
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      throw Error(cat("[data] ", name, " is a truncated gzip file (it ends mid-stream); re-create or re-download it"));
    }
    throw Error(cat("[data] ", name, " is a damaged gzip file (zlib: ", z.msg ? z.msg : "error", ", code ", rc,
                    "); re-create or re-download it"));
  }
}

}  // namespace zero::data
