// The planner's activation counts for the shapes it names: LLaMA shapes (counted by the planner,
// tensor by tensor) and GPT-2 shapes (the GPT's own count), with and without checkpointing.
#include <gtest/gtest.h>

#include "common/error.h"
#include "model/gpt.h"
#include "planner/activation_counts.h"
#include "planner/planner.h"

namespace zero {
namespace {

// A tiny LLaMA counted by hand from the list in activation_counts.h.
TEST(LlamaActivations, TinyShapeByHand) {
  LlamaShape s;
  s.vocab_size = 100, s.seq_len = 8, s.hidden = 16, s.layers = 3, s.heads = 4, s.kv_heads = 2, s.intermediate = 40;
  const std::int64_t B = 2, BT = 16, C = 16, kv = 8, F = 40, V = 100, H = 4, T = 8, L = 3;
  const std::int64_t block = BT * C /*rms1*/ + BT + BT * (C + 2 * kv) + BT * C /*attn out*/ + B * H * T /*lse*/ +
                             BT * C /*o*/ + BT * C /*res*/ + BT * C /*rms2*/ + BT + 3 * BT * F + BT * C /*w2*/ + BT * C /*res*/;
  const std::int64_t once = BT * C /*embedding*/ + BT * C + BT + 2 * BT * V + BT /*head*/ +
                            2 * BT * C + BT * (C + 2 * kv) + 3 * BT * F + BT * C /*backward scratch*/;
  EXPECT_EQ(llama_activation_bytes(s, 2, {}, 4), ActivationBytes({static_cast<std::uint64_t>(4 * (once + L * block)), 0}));
  EXPECT_EQ(llama_activation_bytes(s, 2, {true, false}, 2),
            ActivationBytes({static_cast<std::uint64_t>(2 * (once + L * BT * C + block - BT * C)), 0}));
  EXPECT_EQ(llama_activation_bytes(s, 2, {true, true}, 4),
            ActivationBytes({static_cast<std::uint64_t>(4 * (once + block)), static_cast<std::uint64_t>(4 * (L + 1) * BT * C)}));
  EXPECT_THROW(llama_activation_bytes(s, 2, {false, true}, 4), ConfigError);
}

// Every named shape is modelled; checkpointing lowers the device activations and scales with the
// micro-batch; for GPT-2 shapes the plan's activations are the GPT's own.
TEST(PlannerActivations, EveryNamedShapeWithAndWithoutCheckpointing) {
  for (const std::string& name : named_model_names()) {
    PlanInput in;
    in.model = named_model(name);
    in.ranks = 8;
    in.settings.stage = 3;
    in.settings.precision.compute = Dtype::kBf16;
    in.micro_batch = 2;
    const Plan plain = plan(in);
    EXPECT_TRUE(plain.activations_modelled) << name;
    in.checkpointing.enabled = true;
    const Plan ckpt = plan(in);
    EXPECT_LT(ckpt.device[Category::kActivations], plain.device[Category::kActivations]) << name;
    in.micro_batch = 4;
    EXPECT_GT(plan(in).device[Category::kActivations], ckpt.device[Category::kActivations]) << name;
    if (in.model.gpt) {  // in fp32, where the engine adds no widening scratch to the model's own activations
      in.settings.precision.compute = Dtype::kF32;
      in.micro_batch = 2;
      EXPECT_EQ(plan(in).device[Category::kActivations], Gpt::activation_bytes(*in.model.gpt, 2, {true, false}, GptCompute{"cuda"}).device)
          << name;  // the planner's default device: a GPU's
    }
  }
}

}  // namespace
}  // namespace zero
