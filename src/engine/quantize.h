// ZeRO++'s weight quantiser (qwZ): symmetric int8 in blocks of kQuantBlock elements, one f32
// scale per block. Stage 3 quantises a rank's slice before it is all-gathered and dequantises
// the whole unit on arrival (engine/param_gather.h); the masters are never quantised.
//
// A block x[0..b) (b = kQuantBlock, the last block of a slice may be shorter) with m = max |x|:
//   scale = m / 127 (f32), q[i] = rint(x[i] * (127 / m)) in [-127, 127] (round half to even, the
//   default rounding mode), dequantised x'[i] = q[i] * scale (f32). m = 0: scale 0, q = 0.
// |x - x'| <= m / 254 plus float rounding of one multiplication each way. DeepSpeed's kernel
// (csrc/quantization, Symmetric) scales by 128 / m and clamps to [-128, 127], so its largest
// element is clipped by one step; 127 keeps the grid symmetric and clips nothing.
//
// Why 2048: DeepSpeed's CUDAQuantizer picks groups of about 4k-8k elements ("the optimal size is
// 4k"); the scale costs 4 bytes a block, 0.2% of the int8 payload at 2048, and a smaller block
// follows the local magnitude more closely (measured error: docs/zeropp.md).
//
// The packet a rank sends for a slice of k elements: k int8 values, then ceil(k / kQuantBlock)
// f32 scales (unaligned; read with memcpy): quantized_bytes(k) bytes, nothing else.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zero {

constexpr std::size_t kQuantBlock = 2048;

// Blocks of a slice of k elements, and the bytes of its packet.
constexpr std::size_t quant_blocks(std::size_t k) { return (k + kQuantBlock - 1) / kQuantBlock; }
constexpr std::size_t quantized_bytes(std::size_t k) { return k + 4 * quant_blocks(k); }

// x (k f32) -> packet (quantized_bytes(k) bytes).
void quantize_int8(const float* x, std::size_t k, std::uint8_t* packet);
// packet of k elements -> out (k f32).
void dequantize_int8(const std::uint8_t* packet, std::size_t k, float* out);

}  // namespace zero
