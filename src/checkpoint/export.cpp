#include "checkpoint/export.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "checkpoint/directory.h"
#include "checkpoint/reshard.h"
#include "common/output_file.h"
#include "common/half.h"
#include "model/gpt_hf_names.h"

namespace zero::checkpoint {
namespace fs = std::filesystem;

ParameterReader::ParameterReader(std::string dir, Manifest manifest) : dir_(std::move(dir)), m_(std::move(manifest)) {}
ParameterReader::~ParameterReader() = default;

ShardReader& ParameterReader::reader(int rank) {
  auto& r = readers_[rank];
  if (!r) r = std::make_unique<ShardReader>((fs::path(dir_) / m_.files.at(rank).name).string(), m_.files[rank], m_.block_bytes);
  return *r;
}

std::vector<float> ParameterReader::read(int i) {
  const nlohmann::json& p = m_.parameters.at(i);
  const int u = p.at("unit");
  std::size_t numel = 1;
  for (std::int64_t d : shape(i)) numel *= static_cast<std::size_t>(d);
  const std::vector<Piece> pieces = pieces_of(m_.units.at(u), p.at("unit_offset").get<std::size_t>(), numel);
  for (const Piece& piece : pieces) reader(piece.rank);  // each file's size checked before the allocation
  std::vector<float> out(numel);
  for (const Piece& piece : pieces) {
    reader(piece.rank).read(m_.tensor_byte(u, 0) + sizeof(float) * piece.source, sizeof(float) * piece.count, out.data() + piece.dest);
  }
  return out;
}

std::vector<float> ParameterReader::read_all() {
  std::vector<float> all;
  for (int i = 0; i < count(); ++i) {
    const std::vector<float> p = read(i);
    all.insert(all.end(), p.begin(), p.end());
  }
  return all;
}

std::uint64_t ParameterReader::verify_all() {
  std::uint64_t total = 0;
  std::vector<unsigned char> buf;
  for (int r = 0; r < m_.world_size; ++r) {
    const std::uint64_t bytes = m_.files[r].bytes;
    reader(r);  // the file's size checked before a block is allocated
    for (std::uint64_t at = 0; at < bytes; at += m_.block_bytes) {
      const std::size_t n = static_cast<std::size_t>(std::min(m_.block_bytes, bytes - at));
      buf.resize(n);
      reader(r).read(at, n, buf.data());
    }
    total += bytes;
  }
  return total;
}

namespace {

// (rows, cols) -> (cols, rows)
std::vector<float> transposed(const std::vector<float>& x, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(x.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  return t;
}

}  // namespace

std::vector<ExportTensor> export_tensors(const ParameterReader& reader, bool bf16) {
  const bool llama = reader.manifest().info.value("/model/type"_json_pointer, std::string("gpt")) == "llama";
  std::vector<ExportTensor> tensors;
  for (int i = 0; i < reader.count(); ++i) {
    ExportTensor t{i, llama ? HfTensor{reader.name(i), false} : gpt2_tensor(reader.name(i)), reader.shape(i), 0};
    if (t.hf.transpose) std::reverse(t.shape.begin(), t.shape.end());
    std::uint64_t numel = 1;
    for (std::int64_t d : t.shape) numel *= static_cast<std::uint64_t>(d);
    t.bytes = numel * (bf16 ? 2 : 4);
    tensors.push_back(std::move(t));
  }
  return tensors;
}

std::uint64_t write_safetensors(ParameterReader& reader, const std::vector<ExportTensor>& tensors, std::size_t first,
                                std::size_t last, bool bf16, OutputFile& out) {
  nlohmann::json header = nlohmann::json::object();
  std::uint64_t at = 0;
  for (std::size_t i = first; i < last; ++i) {
    const ExportTensor& t = tensors[i];
    header[t.hf.name] = {{"dtype", bf16 ? "BF16" : "F32"}, {"shape", t.shape}, {"data_offsets", {at, at + t.bytes}}};
    at += t.bytes;
  }
  header["__metadata__"] = {{"format", "pt"}, {"source", "zero checkpoint"}, {"step", std::to_string(reader.manifest().step)}};
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');  // the data starts 8-byte aligned
  std::uint64_t written = 0;
  auto append = [&](const void* bytes, std::size_t size) {
    out.write(std::string_view(static_cast<const char*>(bytes), size));
    written += size;
  };
  unsigned char len[8];
  for (int b = 0; b < 8; ++b) len[b] = static_cast<unsigned char>(static_cast<std::uint64_t>(text.size()) >> (8 * b));  // little-endian u64
  append(len, 8);
  append(text.data(), text.size());
  for (std::size_t i = first; i < last; ++i) {
    const ExportTensor& t = tensors[i];
    std::vector<float> x = reader.read(t.param);
    if (t.hf.transpose) x = transposed(x, t.shape[1], t.shape[0]);
    if (bf16) {
      std::vector<std::uint16_t> h(x.size());
      for (std::size_t e = 0; e < x.size(); ++e) h[e] = float_to_bf16(x[e]);
      append(h.data(), h.size() * 2);
    } else {
      append(x.data(), x.size() * 4);
    }
  }
  return written;
}

std::vector<NamedPath> checkpoint_inputs(const ParameterReader& reader) {
  std::vector<NamedPath> inputs = {{"the checkpoint's manifest", reader.dir() + "/manifest.json"}};
  for (int r = 0; r < reader.manifest().world_size; ++r) {
    inputs.push_back({"a rank file of the checkpoint", reader.dir() + "/" + rank_file_name(r, reader.manifest().world_size)});
  }
  return inputs;
}

ExportStats export_safetensors(ParameterReader& reader, const std::string& out_path, bool bf16) {
  const std::vector<ExportTensor> tensors = export_tensors(reader, bf16);
  // The one way a user's path is written (common/output_file.h); the checkpoint's own files are
  // its inputs, so --out naming one of them is refused before anything is written.
  OutputFile w({"--out", out_path}, checkpoint_inputs(reader));
  check_outside_checkpoints("--out", out_path);  // `latest` overwritten, or the file pruned with a step
  ExportStats stats;
  stats.file_bytes = write_safetensors(reader, tensors, 0, tensors.size(), bf16, w);
  w.commit();
  stats.tensors = static_cast<int>(tensors.size());
  for (const ExportTensor& t : tensors) stats.largest_tensor_bytes = std::max(stats.largest_tensor_bytes, t.bytes * (bf16 ? 2 : 1));  // f32
  return stats;
}

}  // namespace zero::checkpoint
