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
#include "common/output_file.h"
#include "model/gpt_hf_names.h"

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

// One of the checkpoint's parameters as Hugging Face's model holds it: GPT-2's names and layouts
// (model/gpt_hf_names.h) for a GPT; LlamaForCausalLM's, which are zero's (model/llama_shape.h), for
// a LLaMA, whose rotary embeddings rotate_half's pairs as LlamaForCausalLM's q and k rows expect.
struct ExportTensor {
  int param = 0;                     // the checkpoint's parameter
  HfTensor hf;
  std::vector<std::int64_t> shape;   // Hugging Face's
  std::uint64_t bytes = 0;           // in the exported dtype
};

// Every parameter of the checkpoint as exported, in layout order.
std::vector<ExportTensor> export_tensors(const ParameterReader& reader, bool bf16);

// Writes tensors [first, last) as one safetensors file into `out` (the caller commits it), read
// tensor by tensor: the peak memory is one tensor. Returns the bytes written.
std::uint64_t write_safetensors(ParameterReader& reader, const std::vector<ExportTensor>& tensors, std::size_t first,
                                std::size_t last, bool bf16, OutputFile& out);

// The checkpoint's manifest and rank files, which an output must not be.
std::vector<NamedPath> checkpoint_inputs(const ParameterReader& reader);

// Writes the checkpoint's model as one safetensors file, f32 or bf16, through OutputFile: a path
// that is not a regular file, or is one of the checkpoint's files or inside a checkpoint
// directory, is refused before anything is written, and the file appears whole or not at all.
ExportStats export_safetensors(ParameterReader& reader, const std::string& out_path, bool bf16);

}  // namespace zero::checkpoint
