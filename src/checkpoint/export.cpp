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

struct Planned {
  int param;
  HfTensor hf;
  std::vector<std::int64_t> shape;  // Hugging Face's
  std::uint64_t begin, end;         // data offsets
};

// (rows, cols) -> (cols, rows)
std::vector<float> transposed(const std::vector<float>& x, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(x.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  return t;
}

}  // namespace

ExportStats export_safetensors(ParameterReader& reader, const std::string& out_path, bool bf16) {
  const std::size_t elem = bf16 ? 2 : 4;
  std::vector<Planned> plan;
  std::uint64_t at = 0;
  ExportStats stats;
  nlohmann::json header = nlohmann::json::object();
  // A LLaMA's parameters have Hugging Face's names and (out, in) layouts already (model/llama_shape.h),
  // and its rotary embeddings rotate_half's pairs, as LlamaForCausalLM's q and k rows expect.
  const bool llama = reader.manifest().info.value("/model/type"_json_pointer, std::string("gpt")) == "llama";
  for (int i = 0; i < reader.count(); ++i) {
    Planned p{i, llama ? HfTensor{reader.name(i), false} : gpt2_tensor(reader.name(i)), reader.shape(i), 0, 0};
    if (p.hf.transpose) std::reverse(p.shape.begin(), p.shape.end());
    std::uint64_t numel = 1;
    for (std::int64_t d : p.shape) numel *= static_cast<std::uint64_t>(d);
    p.begin = at;
    p.end = at += numel * elem;
    stats.largest_tensor_bytes = std::max<std::uint64_t>(stats.largest_tensor_bytes, numel * 4);
    header[p.hf.name] = {{"dtype", bf16 ? "BF16" : "F32"}, {"shape", p.shape}, {"data_offsets", {p.begin, p.end}}};
    plan.push_back(std::move(p));
  }
  header["__metadata__"] = {{"format", "pt"}, {"source", "zero checkpoint"}, {"step", std::to_string(reader.manifest().step)}};
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');  // the data starts 8-byte aligned
  // The one way a user's path is written (common/output_file.h); the checkpoint's own files are
  // its inputs, so --out naming one of them is refused before anything is written.
  std::vector<NamedPath> inputs = {{"the checkpoint's manifest", reader.dir() + "/manifest.json"}};
  for (int r = 0; r < reader.manifest().world_size; ++r) {
    inputs.push_back({"a rank file of the checkpoint", reader.dir() + "/" + rank_file_name(r, reader.manifest().world_size)});
  }
  OutputFile w({"--out", out_path}, inputs);
  check_outside_checkpoints("--out", out_path);  // `latest` overwritten, or the file pruned with a step
  auto append = [&](const void* bytes, std::size_t size) {
    w.write(std::string_view(static_cast<const char*>(bytes), size));
    stats.file_bytes += size;
  };
  std::uint64_t n = text.size();
  unsigned char len[8];
  for (int b = 0; b < 8; ++b) len[b] = static_cast<unsigned char>(n >> (8 * b));  // little-endian u64
  append(len, 8);
  append(text.data(), text.size());
  for (const Planned& p : plan) {
    std::vector<float> x = reader.read(p.param);
    if (p.hf.transpose) x = transposed(x, p.shape[1], p.shape[0]);
    if (bf16) {
      std::vector<std::uint16_t> h(x.size());
      for (std::size_t e = 0; e < x.size(); ++e) h[e] = float_to_bf16(x[e]);
      append(h.data(), h.size() * 2);
    } else {
      append(x.data(), x.size() * 4);
    }
  }
  w.commit();
  stats.tensors = static_cast<int>(plan.size());
  return stats;
}

}  // namespace zero::checkpoint
