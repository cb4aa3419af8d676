#include "checkpoint/safetensors_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_error.h"
#include "common/half.h"

namespace zero::checkpoint {
namespace {

// safetensors' dtypes (safetensors/src/tensor.rs: Dtype) and their element sizes.
const std::map<std::string, std::size_t>& dtype_sizes() {
  static const std::map<std::string, std::size_t> kSizes = {
      {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},   {"F64", 8},     {"I64", 8},     {"U64", 8}};
  return kSizes;
}

void pread_all(int fd, void* out, std::uint64_t n, std::uint64_t at, const std::string& path) {
  auto* p = static_cast<unsigned char*>(out);
  for (std::uint64_t got = 0; got < n;) {
    const ssize_t r = ::pread(fd, p + got, n - got, static_cast<off_t>(at + got));
    if (r <= 0) {
      throw CheckpointError(cat("[hf] reading ", path, " at byte ", at + got, " failed (", r == 0 ? "end of file" : std::strerror(errno),
                                "): the file is damaged or changed while zero read it"));
    }
    got += static_cast<std::uint64_t>(r);
  }
}

// One header entry, checked: CheckpointError naming the file and the tensor.
SafetensorsTensor parse_entry(const std::string& path, const std::string& name, const nlohmann::json& e, std::uint64_t data_start,
                              std::uint64_t file_size) {
  const auto bad = [&](const std::string& what) {
    return CheckpointError(cat("[hf] ", path, ": tensor '", name, "' ", what, ": the file is damaged or not a safetensors file"));
  };
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets")) {
    throw bad("is not an entry {\"dtype\", \"shape\", \"data_offsets\"}");
  }
  SafetensorsTensor t;
  if (!e["dtype"].is_string() || safetensors_dtype_bytes(e["dtype"].get<std::string>()) == 0) {
    throw bad(cat("has dtype ", e["dtype"].dump().substr(0, 40), ", which is not a safetensors dtype"));
  }
  t.dtype = e["dtype"].get<std::string>();
  if (!e["shape"].is_array()) throw bad("has a shape that is not a list");
  for (const auto& d : e["shape"]) {
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (std::uint64_t{1} << 40)) throw bad(cat("has shape ", e["shape"].dump().substr(0, 80)));
    t.shape.push_back(d.get<std::int64_t>());
  }
  const nlohmann::json& o = e["data_offsets"];
  if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned()) {
    throw bad(cat("has data_offsets ", o.dump().substr(0, 80), ", not [begin, end]"));
  }
  const std::uint64_t b = o[0].get<std::uint64_t>(), end = o[1].get<std::uint64_t>();
  if (b > end || end > file_size - data_start) {
    throw bad(cat("has data_offsets [", b, ", ", end, "], past the end of the file's ", file_size - data_start, " data bytes"));
  }
  if (end - b != t.numel() * safetensors_dtype_bytes(t.dtype)) {
    throw bad(cat("of shape ", e["shape"].dump(), " and dtype ", t.dtype, " needs ", t.numel() * safetensors_dtype_bytes(t.dtype),
                  " bytes, but its data_offsets [", b, ", ", end, "] span ", end - b));
  }
  t.begin = data_start + b;
  t.end = data_start + end;
  return t;
}

}  // namespace

std::uint64_t SafetensorsTensor::numel() const {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

std::size_t safetensors_dtype_bytes(const std::string& dtype) {
  const auto it = dtype_sizes().find(dtype);
  return it == dtype_sizes().end() ? 0 : it->second;
}

bool safetensors_dtype_readable(const std::string& dtype) { return dtype == "F32" || dtype == "F16" || dtype == "BF16"; }

SafetensorsFile::SafetensorsFile(std::string path)
    : path_(std::move(path)), fd_(open_input_file({path_, "hf", "safetensors file", ~std::uint64_t{0}})) {
  const std::uint64_t size = fd_.size();
  if (size < 8) throw CheckpointError(cat("[hf] ", path_, " is ", size, " bytes, too short for a safetensors header: the file is truncated"));
  unsigned char len[8];
  pread_all(fd_.get(), len, 8, 0, path_);
  std::uint64_t n = 0;
  for (int b = 7; b >= 0; --b) n = (n << 8) | len[b];  // little-endian u64
  if (n > kMaxHeaderBytes) {
    throw CheckpointError(cat("[hf] ", path_, " declares a header of ", n, " bytes, beyond safetensors' limit of ", kMaxHeaderBytes,
                              ": the file is damaged or not a safetensors file"));
  }
  if (n > size - 8) {
    throw CheckpointError(cat("[hf] ", path_, " declares a header of ", n, " bytes but the file has only ", size - 8,
                              " after the length: the file is truncated"));
  }
  std::string text(n, '\0');
  pread_all(fd_.get(), text.data(), n, 8, path_);
  const nlohmann::json header = nlohmann::json::parse(text, nullptr, false);
  if (!header.is_object()) throw CheckpointError(cat("[hf] ", path_, "'s header is not a JSON object: the file is damaged or not a safetensors file"));
  std::vector<std::pair<std::uint64_t, std::string>> by_offset;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    tensors_[name] = parse_entry(path_, name, entry, 8 + n, size);
    if (tensors_[name].end > tensors_[name].begin) by_offset.emplace_back(tensors_[name].begin, name);  // an empty tensor overlaps nothing
  }
  std::sort(by_offset.begin(), by_offset.end());
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorsTensor& prev = tensors_[by_offset[i - 1].second];
    if (prev.end > by_offset[i].first) {
      throw CheckpointError(cat("[hf] ", path_, ": tensors '", by_offset[i - 1].second, "' and '", by_offset[i].second,
                                "' overlap (their data_offsets share bytes): the file is damaged"));
    }
  }
}

void SafetensorsFile::read(const std::string& name, std::uint64_t first, std::uint64_t count, float* out) {
  const SafetensorsTensor& t = tensors_.at(name);
  const std::size_t elem = safetensors_dtype_bytes(t.dtype);
  ZERO_CHECK(safetensors_dtype_readable(t.dtype) && first + count <= t.numel(), "tensor ", name);
  raw_.resize(count * elem);
  pread_all(fd_.get(), raw_.data(), raw_.size(), t.begin + first * elem, path_);
  bytes_read_ += raw_.size();
  if (t.dtype == "F32") {
    std::memcpy(out, raw_.data(), raw_.size());  // little-endian, as the format is
    return;
  }
  const unsigned char* in = raw_.data();
  if (t.dtype == "BF16") {
    for (std::uint64_t i = 0; i < count; ++i) out[i] = bf16_to_float(static_cast<std::uint16_t>(in[2 * i] | in[2 * i + 1] << 8));
  } else {
    for (std::uint64_t i = 0; i < count; ++i) out[i] = fp16_to_float(static_cast<std::uint16_t>(in[2 * i] | in[2 * i + 1] << 8));
  }
}

}  // namespace zero::checkpoint
