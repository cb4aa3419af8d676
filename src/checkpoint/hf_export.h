// A Hugging Face model directory out of a checkpoint (zero ckpt export DIR --out OUTDIR): the
// weights as transformers' save_pretrained shards them, beside the files the caller gives
// (config.json, generation_config.json, the tokenizer's).
//
// Sharding: the tensors, in layout order and each kept whole, fill a shard until the next would
// take its tensor bytes past max_shard_bytes (the safetensors header is not counted, as
// transformers does not count it); a tensor bigger than the limit fills a shard alone. One shard
// is written as model.safetensors; N shards as model-0000i-of-0000N.safetensors with
// model.safetensors.index.json ({"metadata": {"total_size"}, "weight_map"}), the index
// from_pretrained reads. transformers (huggingface_hub's split_state_dict_into_shards) appends an
// oversized tensor's shard while it keeps filling the current one; here the current shard is
// closed first, so that the shards hold the tensors in layout order (from_pretrained reads either).
//
// The directory appears complete or not at all: every file is written into a sibling directory
// (".NAME.zero-export-PID-N"), which is renamed to OUTDIR at the end; an empty OUTDIR is replaced
// by that rename, and a failure removes the sibling.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/export.h"

namespace zero::checkpoint {

struct HfFile {
  std::string name;   // "config.json", "vocab.json"
  std::string bytes;
};

struct HfDirectoryStats {
  int tensors = 0, shards = 0;
  std::uint64_t total_size = 0;                              // the tensors' bytes (the index's total_size)
  std::vector<std::pair<std::string, std::uint64_t>> files;  // every file written, in order, with its bytes
};

// The shard of each tensor (0-based), by the rule above.
std::vector<int> shard_of_tensors(const std::vector<std::uint64_t>& tensor_bytes, std::uint64_t max_shard_bytes);

// CheckpointError ("[output] --out ...", saying what to do), before any work, when OUTDIR exists
// and is not an empty directory (a file, a device, a directory with files), when its parent is
// not a directory, or when it is inside a checkpoint directory (where --keep would prune it).
void check_hf_directory(const std::string& out_dir);

// Checks OUTDIR as check_hf_directory does, then writes the directory: the files given, then the
// weights, f32 or bf16, one tensor in memory at a time.
HfDirectoryStats export_hf_directory(ParameterReader& reader, const std::string& out_dir, bool bf16, std::uint64_t max_shard_bytes,
                                     const std::vector<HfFile>& files);

}  // namespace zero::checkpoint
