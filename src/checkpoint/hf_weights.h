// A Hugging Face model directory's weights as zero's parameters: the inverse of export
// (checkpoint/export.h). The directory holds model.safetensors, or shards
// model-0000K-of-0000N.safetensors named by model.safetensors.index.json's weight_map (what
// save_pretrained writes; the single file wins when both are there, as transformers reads it).
//
// Names and layouts: a LLaMA's parameters have LlamaForCausalLM's names and (out, in) layouts
// already (model/llama_shape.h); a GPT's map to GPT2LMHeadModel's (model/gpt_hf_names.h), the
// Conv1D weights transposed. GPT-2 files are read with or without the "transformer." prefix
// (GPT2Model saves without it). Tensors accepted and not read: GPT-2's attention-mask buffers
// (attn.bias, attn.masked_bias: zero's attention is causal by construction), LLaMA's
// rotary_emb.inv_freq (zero computes it from rope_theta) and, in a tied model, lm_head.weight
// (transformers ties it to the embedding when it loads, and so does zero). Any other tensor is
// an error, as is a missing one, a shape other than the parameter's, or a dtype other than F32,
// F16 and BF16: all found from the headers before any weight is read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/safetensors_reader.h"
#include "comm/communicator.h"
#include "engine/engine.h"
#include "partition/layout.h"
#include "partition/spec.h"

namespace zero::checkpoint {

class HfWeights {
 public:
  // Opens the directory's safetensors headers and matches every parameter of `units` to its
  // tensor: CheckpointError naming the file and the tensor for any mismatch (see above), a
  // missing shard, or a damaged header.
  HfWeights(const std::string& dir, const std::vector<UnitSpec>& units, bool llama);
  ~HfWeights();

  // Elements [first, first + count) of parameter p (row-major in zero's shape) from its tensor,
  // into out[0, count). Reads only those elements' bytes, and for a transposed tensor the whole
  // rows of zero's layout they lie in.
  void read(const ParamPlace& p, std::size_t first, std::size_t count, float* out);
  std::uint64_t bytes_read() const;           // tensor bytes read (headers apart)
  std::uint64_t weight_bytes() const { return weight_bytes_; }  // of the tensors matched, in their dtypes
  const std::vector<std::string>& files() const { return file_names_; }

 private:
  struct Source {
    int file = 0;
    std::string tensor;
    bool transpose = false;
  };
  struct Listing;  // the weight files, and the index's map of tensors to them
  // model.safetensors, or the index's shards (each checked to exist).
  static Listing list_weight_files(const std::string& dir);
  void open_files(const Listing& listing);
  // Parameter p's tensor, checked: CheckpointError if missing, of another shape or an unread dtype.
  void match(const ParamSpec& p, bool llama, const std::string& prefix);
  // CheckpointError for a tensor no parameter reads, unless it is one accepted and not read.
  void check_unread(bool llama, const std::string& prefix, const std::vector<std::int64_t>& embedding_shape) const;

  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<std::string> file_names_;
  std::map<std::string, int> tensor_file_;  // every tensor of the files: the file holding it
  std::string files_text_;                 // the files, for messages
  std::map<std::string, Source> sources_;  // by zero's parameter name
  std::set<std::string> read_by_;          // the tensors a parameter reads
  std::uint64_t weight_bytes_ = 0;
  std::vector<float> rows_;  // a transposed read's rows, before they are put in zero's order
};

struct HfImportStats {
  std::uint64_t bytes_read = 0;  // by this rank
  std::uint64_t weight_bytes = 0;  // the model's tensors, all of them
  double seconds = 0;
};

// Loads the directory's weights into a fresh engine (no step taken: its Adam moments are zero) as
// the state of step 0: each rank reads only the elements it holds (held_state: its slices at
// stages 1-3) and writes them as its masters, and the engine makes its parameters from them. A collective: if any rank fails,
// every rank throws that rank's error, before any rank uses what it read.
HfImportStats import_hf_weights(Engine& engine, const std::string& dir, bool llama, Communicator& comm);

}  // namespace zero::checkpoint
