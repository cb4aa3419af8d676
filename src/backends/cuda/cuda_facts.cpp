// The cuda backend's facts (cuda_backend.cpp registers it). Compiled in every build.
//
// Peak FLOP/s, for model FLOPs utilisation (cli/mfu.h): the H100/H200 SXM's dense datasheet
// figures, 989 TFLOP/s in bf16 and fp16 and 67 in fp32 (a cuBLAS bf16 8192^3 product measured
// 769-798 on this workplace's H200: /work/.library/device/KINDS.md).
#include "backends/facts.h"

namespace zero {

BackendFacts cuda_facts() {
  BackendFacts f;
  f.name = "cuda";
  f.summary = "the GPT's kernels on the GPU";
  f.device_tier_is_host = false;
  f.peak_f32 = 67e12;
  f.peak_bf16 = 989e12;
  f.peak_f16 = 989e12;
  f.peak_label = "an H200's";
  f.missing = "no CUDA device";
  f.needs = "a GPU";
  return f;
}

}  // namespace zero
