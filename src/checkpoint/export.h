// Reading a checkpoint whole, one parameter at a time (inspect, export, generate and eval need
// no engine and no world): each parameter's f32 masters gathered from the rank files that hold
// them, every block read verified. The peak memory is one parameter, not the model.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/manifest.h"
#include "checkpoint/shard_file.h"

namespace zero::checkpoint {

class ParameterReader {
 public:
  ParameterReader(std::string dir, Manifest manifest);
  ~ParameterReader();

  const Manifest& manifest() const { return m_; }
  const std::string& dir() const { return dir_; }
  int count() const { return static_cast<int>(m_.parameters.size()); }
  std::string name(int i) const { return m_.parameters.at(i).at("name"); }
  std::vector<std::int64_t> shape(int i) const { return m_.parameters.at(i).at("shape"); }
  // Parameter i's master values, row-major in its shape.
  std::vector<float> read(int i);
  // Every block of every rank file read and its CRC-32 checked; the bytes read.
  std::uint64_t verify_all();
  // Every parameter in layout order, unpadded (what Engine::full_parameters gives).
  std::vector<float> read_all();

 private:
  ShardReader& reader(int rank);

  std::string dir_;
  Manifest m_;
  std::map<int, std::unique_ptr<ShardReader>> readers_;
};

struct ExportStats {
  int tensors = 0;
  std::uint64_t file_bytes = 0;
  std::uint64_t largest_tensor_bytes = 0;  // f32, before conversion
};

// Writes the checkpoint's GPT as one safetensors file with GPT-2's names and layouts
// (model/gpt_hf_names.h), or its LLaMA with LlamaForCausalLM's (model/llama_shape.h), f32 or bf16, tensor by tensor, through OutputFile: a path that is not a
// regular file, or is one of the checkpoint's files, is refused before anything is written, and
// the file appears whole or not at all.
ExportStats export_safetensors(ParameterReader& reader, const std::string& out_path, bool bf16);

}  // namespace zero::checkpoint
