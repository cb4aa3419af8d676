// Activation checkpointing in the GPT: the recompute of a block before its backward, and (cpu
// checkpointing) the copies of kept block inputs between the host tier and the device.
//
// The recompute calls the block's own forward on the kept input, so it runs the same kernels in
// the same order on the same bits as the first forward (but the MLP projection, whose output
// backward does not read: gpt.cpp's block_forward skips it): the internals it leaves for backward,
// and so the gradients, are the same bits as without checkpointing (the kernels are
// deterministic: gpt_kernels.h).
#include "model/gpt.h"

namespace zero {

using namespace gpt;  // the Act indices (gpt_activations.h)

void Gpt::recompute_block(int l, const UnitViews& v) { block_forward(l, v, /*recompute=*/true); }

// cpu checkpointing: block l's kept input (l = L: the head's) host -> the device's current-input
// buffer: on the cpu table a memcpy between two host buffers, on the cuda table a copy over the
// link; either way every kernel reads device-tier memory only.
void Gpt::stage_block_input(int l) {
  if (!ckpt_.cpu) return;
  const std::int64_t n = static_cast<std::int64_t>(B_) * shape_.seq_len * shape_.channels;
  k_->copy(acts_[kEncoded], acts_[kKept] + static_cast<std::int64_t>(l) * n, n);
}

// cpu checkpointing: x, block l's input just computed on the device, -> its host slot.
void Gpt::keep_block_input(int l, const float* x) {
  if (!ckpt_.cpu) return;
  const std::int64_t n = static_cast<std::int64_t>(B_) * shape_.seq_len * shape_.channels;
  k_->copy(acts_[kKept] + static_cast<std::int64_t>(l) * n, x, n);
}

}  // namespace zero
