// Reading safetensors files (Hugging Face's weight format) by byte range, for --init-from.
//
// A file is an 8-byte little-endian header length N, N bytes of JSON ({"name": {"dtype",
// "shape", "data_offsets": [begin, end]}, ..., "__metadata__": {...}}), then the data, the
// offsets counting from its start. The header is checked whole when the file is opened (its
// length against the file and an upper bound, every entry's dtype, shape and offsets, no two
// tensors overlapping), so that a damaged file is refused before any rank reads a weight. The
// reader then reads any element range of a tensor with pread, converting F32, F16 and BF16 to
// f32 exactly, and counts the bytes it read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/input_file.h"

namespace zero::checkpoint {

struct SafetensorsTensor {
  std::string dtype;                 // as written: "F32", "BF16", "I64", ...
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // byte offsets in the file (the header counted)
  std::uint64_t numel() const;
};

// The bytes of one element of a safetensors dtype; 0 for a name the format does not have.
std::size_t safetensors_dtype_bytes(const std::string& dtype);
// Whether zero converts the dtype to f32 (F32, F16, BF16).
bool safetensors_dtype_readable(const std::string& dtype);

class SafetensorsFile {
 public:
  // Opens and checks the header: CheckpointError naming the file (and the tensor) for a file too
  // short for its header, a header length beyond the file or kMaxHeaderBytes, a header that is
  // not a JSON object of tensor entries, an unknown dtype, a shape or offsets that disagree with
  // the dtype, offsets past the end of the file, or two tensors that overlap.
  explicit SafetensorsFile(std::string path);

  static constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{100} << 20;  // safetensors' own limit

  const std::string& path() const { return path_; }
  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }
  // Elements [first, first + count) of `name` (row-major) as f32 into out[0, count). The dtype
  // must be readable (safetensors_dtype_readable).
  void read(const std::string& name, std::uint64_t first, std::uint64_t count, float* out);
  std::uint64_t bytes_read() const { return bytes_read_; }  // tensor data read by read(), not the header

 private:
  std::string path_;
  InputFd fd_;
  std::map<std::string, SafetensorsTensor> tensors_;
  std::vector<unsigned char> raw_;  // the last read's bytes, before conversion
  std::uint64_t bytes_read_ = 0;
};

}  // namespace zero::checkpoint
