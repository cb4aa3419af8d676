// The whole GPT on the GPU against the CPU GPT (the oracle): one forward and backward of a small
// GPT, the loss and every parameter's gradient compared per tensor; the GPU run reproducible bit
// for bit; and activation checkpointing (on the GPU, and with the kept inputs in pinned host
// memory) giving the GPU's own gradient bits, with the activation bytes the planner predicts.
// Skipped without a GPU.
//
// Tolerances (max |gpu - cpu| / max |cpu| per gradient tensor; the loss relative):
//   f32 products: loss 1e-5, gradients 1e-3. Each kernel agrees to 1e-5 (row reductions) or 1e-4
//     (products) (gpt_cuda_kernels_test.cpp); a gradient passes through ~10 of them per block
//     from the loss down, so errors compound to ~1e-4 for two blocks; 1e-3 leaves a factor of
//     ten and stays far below what any wrong index or missing term gives (order 1).
//   bf16 operands: loss 2e-2, gradients 1e-1: the GPU rounds every layer's operands to 8 bits of
//     mantissa and the CPU does not, so this is the size of mixed precision itself (2^-8 per
//     product, compounded), checked for being the same computation, not the same rounding.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_support.h"
#include "model/gpt.h"
#include "partition/init.h"

namespace zero {
namespace {

using test::normalized_error;
using test::same_bits;
using test::TableTensor;

struct Case {
  GptShape shape;
  int B;
};
// Odd V, T past the CPU's attention block of 64, C not a multiple of 32, one and several layers.
const Case kCases[] = {{{67, 13, 48, 2, 3}, 3}, {{50, 70, 40, 1, 5}, 2}};

struct Result {
  float loss = 0;
  std::vector<float> grads;           // the whole flat layout (world size 1)
  ActivationBytes held;               // the ledger's activation peak, by tier
};

std::vector<float> initial_params(const FlatLayout& layout) {
  std::vector<float> params(layout.padded_numel());
  for (int u = 0; u < layout.num_units(); ++u) {
    init_segments(layout.unit(u), layout.unit_segments(u), 7, params.data() + layout.unit(u).flat_offset);
  }
  return params;
}

// One forward and backward with `compute`'s kernels; params and grads in that table's memory.
Result run(const Case& c, const GptCompute& compute, const GptCheckpointing& ckpt = {}) {
  const FlatLayout layout(c.shape.units(), 1);
  Ledger ledger, scratch_ledger;
  std::unique_ptr<GptKernels> mem = make_gpt_kernels(compute);  // holds the engine's part: params, grads
  TableTensor params(*mem, scratch_ledger, initial_params(layout));
  TableTensor grads(*mem, scratch_ledger, std::vector<float>(layout.padded_numel(), 0.0f));
  Gpt gpt(c.shape, c.B, ledger, ckpt, compute);
  std::vector<std::int32_t> in(static_cast<std::size_t>(c.B) * c.shape.seq_len), tgt(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    in[i] = static_cast<std::int32_t>(counter_uniform(11, i) * c.shape.vocab_size);
    tgt[i] = static_cast<std::int32_t>(counter_uniform(12, i) * c.shape.vocab_size);
  }
  gpt.set_batch(in.data(), tgt.data());
  UnitViews views(layout);
  for (int u = 0; u < layout.num_units(); ++u) {
    views.set(u, params.get() + layout.unit(u).flat_offset, grads.get() + layout.unit(u).flat_offset);
  }
  for (int u = 0; u < layout.num_units(); ++u) gpt.forward(u, views);
  for (int u = layout.num_units() - 1; u >= 0; --u) gpt.backward(u, views);
  Result r;
  r.loss = gpt.loss();
  r.grads = grads.host();
  const int a = static_cast<int>(Category::kActivations);
  r.held = {ledger.usage(Tier::kDevice).peak[a], ledger.usage(Tier::kHost).peak[a]};
  return r;
}

// Every parameter's gradient within `tol` of the CPU's, as its own tensor.
void expect_gradients_near(const Case& c, const Result& gpu, const Result& cpu, double tol) {
  const FlatLayout layout(c.shape.units(), 1);
  for (int u = 0; u < layout.num_units(); ++u) {
    for (const ParamPlace& p : layout.unit(u).params) {
      const std::size_t at = layout.unit(u).flat_offset + p.offset;
      const std::vector<float> g(gpu.grads.begin() + at, gpu.grads.begin() + at + p.numel);
      const std::vector<float> want(cpu.grads.begin() + at, cpu.grads.begin() + at + p.numel);
      const double err = normalized_error(g, want);
      EXPECT_LE(err, tol) << c.shape.describe() << " unit " << layout.unit(u).name << " " << p.spec.name;
    }
  }
}

TEST(GptCuda, LossAndEveryGradientMatchTheCpu) {
  struct Tolerance {
    Dtype operands;
    double loss, grads;
  };
  for (const Tolerance& t : {Tolerance{Dtype::kF32, 1e-5, 1e-3}, Tolerance{Dtype::kBf16, 2e-2, 1e-1}}) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(testing::Message() << dtype_label(t.operands) << " operands");
      const Result cpu = run(c, {"cpu", Dtype::kF32});
      const Result gpu = run(c, {"cuda", t.operands});
      EXPECT_NEAR(gpu.loss, cpu.loss, t.loss * cpu.loss) << c.shape.describe();
      expect_gradients_near(c, gpu, cpu, t.grads);
    }
  }
}

// No atomics, fixed reduction orders, a fixed cuBLAS workspace: the same bits every run, which is
// what keeps ZeRO's stages bit-identical to each other on the GPU.
TEST(GptCuda, ReproducibleBitForBit) {
  for (const Case& c : kCases) {
    for (Dtype t : {Dtype::kF32, Dtype::kBf16}) {
      const Result a = run(c, {"cuda", t}), b = run(c, {"cuda", t});
      EXPECT_EQ(std::memcmp(&a.loss, &b.loss, sizeof a.loss), 0) << c.shape.describe();
      EXPECT_TRUE(same_bits(a.grads, b.grads)) << c.shape.describe() << " " << dtype_label(t);
    }
  }
}

TEST(GptCuda, CheckpointingGivesTheSameGradientBitsAndPredictedBytes) {
  const GptCheckpointing modes[] = {{true, false}, {true, true}};
  for (const Case& c : kCases) {
    const Result plain = run(c, {"cuda", Dtype::kF32});
    EXPECT_EQ(plain.held, Gpt::activation_bytes(c.shape, c.B)) << c.shape.describe();
    for (const GptCheckpointing& m : modes) {
      const Result r = run(c, {"cuda", Dtype::kF32}, m);
      EXPECT_TRUE(same_bits(r.grads, plain.grads)) << c.shape.describe() << (m.cpu ? " cpu checkpointing" : " checkpointing");
      EXPECT_EQ(r.held, Gpt::activation_bytes(c.shape, c.B, m)) << c.shape.describe();
    }
  }
}

}  // namespace
}  // namespace zero

int main(int argc, char** argv) { return zero::test::run_gpu_tests(argc, argv); }
