// The matrix products of one training step of a GPT on one rank, as the CPU kernels call them
// (backends/cpu/gpt_kernels.cpp), for timing them alone: `zero bench train`'s GEMM-bound limit
// (the step's own products, every rank at once, with the library the run uses) and
// zero_bench_matmul's per-class figures.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/matmul.h"
#include "model/gpt_shape.h"

namespace zero::cli {

enum class ProductClass { kLinearForward, kLinearInputGradient, kLinearWeightGradient, kAttention };

// c (M,N) = alpha op(a) (M,K) op(b) (K,N) + beta c, as Matmul::run takes it.
struct ProductShape {
  ProductClass cls;
  int M, N, K;
  bool ta, tb;
  int lda, ldb, ldc;
  float alpha, beta;
  bool b_is_weight = false;  // b is a linear layer's weight: a bf16 product takes it in bf16 as it is
  double flops() const { return 2.0 * M * N * K; }
};

// Every product of one step of `shape` at `micro_batch` sequences: per block its four linear
// layers (qkv, attention projection, fc, fc projection) and the tied head, each forward, input
// gradient and weight gradient; and attention's 64-row query blocks per (sequence, head), forward
// (q kᵀ, att v) and backward (dout vᵀ, dpre k, attᵀ dout, dpreᵀ q), each stopping at the block's
// last key as the kernel does.
std::vector<ProductShape> step_products(const GptShape& shape, int micro_batch);

double total_flops(const std::vector<ProductShape>& products);

// Operand buffers large enough for every product of `products`, filled with small values.
struct ProductOperands {
  explicit ProductOperands(const std::vector<ProductShape>& products);
  std::vector<float> a, b, c;
  std::vector<std::uint16_t> b16;  // b rounded to bf16: the weights as a bf16 run's engine holds them
};

// Seconds to run every product of `products` once through `mm`.
double run_products(Matmul& mm, const std::vector<ProductShape>& products, ProductOperands& operands);

// The fastest of `repeats` timed passes of run_products after one untimed pass (which also warms
// the library's caches and threads).
double time_products(Matmul& mm, const std::vector<ProductShape>& products, ProductOperands& operands, int repeats);

}  // namespace zero::cli
