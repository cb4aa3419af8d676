// Activation checkpointing in the GPT: the same gradient bits with and without it, in every stage
// and with offload; the ledger's activation bytes (device and host tier) are what the model
// says it allocates, and checkpointing saves exactly the predicted amount.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "comm/thread_world.h"
#include "common/error.h"
#include "backends/registry.h"
#include "model/gpt.h"
#include "partition/init.h"
#include "../engine/gpt_run.h"

namespace zero {
namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const GptCheckpointing kModes[] = {{false, false}, {true, false}, {true, true}};
const char* mode_name(const GptCheckpointing& c) { return !c.enabled ? "plain" : c.cpu ? "cpu checkpointing" : "checkpointing"; }

// One forward and backward over a world-size-1 layout: the gradients, and the ledger's
// activation bytes while the model lives.
std::vector<float> gradients(const GptShape& shape, int B, const GptCheckpointing& ckpt, ActivationBytes* held) {
  const FlatLayout layout(shape.units(), 1);
  std::vector<float> params(layout.padded_numel()), grads(layout.padded_numel(), 0.0f);
  for (int u = 0; u < layout.num_units(); ++u) init_segments(layout.unit(u), layout.unit_segments(u), 7, params.data() + layout.unit(u).flat_offset);
  Ledger ledger;
  Gpt gpt(shape, B, ledger, ckpt);
  std::vector<std::int32_t> in(static_cast<std::size_t>(B) * shape.seq_len), tgt(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    in[i] = static_cast<std::int32_t>(counter_uniform(11, i) * shape.vocab_size);
    tgt[i] = static_cast<std::int32_t>(counter_uniform(12, i) * shape.vocab_size);
  }
  gpt.set_batch(in.data(), tgt.data());
  UnitViews views(layout);
  for (int u = 0; u < layout.num_units(); ++u) views.set(u, params.data() + layout.unit(u).flat_offset, grads.data() + layout.unit(u).flat_offset);
  for (int u = 0; u < layout.num_units(); ++u) gpt.forward(u, views);
  for (int u = layout.num_units() - 1; u >= 0; --u) gpt.backward(u, views);
  const int a = static_cast<int>(Category::kActivations);
  held->device = ledger.usage(Tier::kDevice).peak[a];
  held->host = ledger.usage(Tier::kHost).peak[a];
  return grads;
}

// Shapes across their ranges: one and several layers, T past the attention block of 64, B > 1.
TEST(GptCheckpointing, SameGradientBitsAndPredictedBytes) {
  const std::vector<std::pair<GptShape, int>> cases = {
      {{32, 8, 16, 1, 2}, 1}, {{64, 16, 32, 3, 4}, 2}, {{96, 80, 24, 2, 3}, 3}, {{256, 64, 128, 4, 4}, 2}};
  for (const auto& [shape, B] : cases) {
    ActivationBytes plain_held;
    const std::vector<float> plain = gradients(shape, B, {}, &plain_held);
    EXPECT_EQ(plain_held, Gpt::activation_bytes(shape, B)) << shape.describe();
    for (const GptCheckpointing& c : {kModes[1], kModes[2]}) {
      ActivationBytes held;
      EXPECT_TRUE(same_bits(gradients(shape, B, c, &held), plain)) << shape.describe() << " " << mode_name(c);
      EXPECT_EQ(held, Gpt::activation_bytes(shape, B, c)) << shape.describe() << " " << mode_name(c);
      // What checkpointing saves: L-1 blocks' internals (all but the kept block output), each
      // 4 bytes x (B*T*(17C + 4) + B*H*T*T: att; the scores' scratch is one layer's either way);
      // cpu checkpointing moves L-1 kept inputs to the host and adds the head's kept input there.
      const std::uint64_t BT = static_cast<std::uint64_t>(B) * shape.seq_len, C = shape.channels, L = shape.layers;
      const std::uint64_t internals = 4 * (BT * (17 * C + 4) + 1ull * B * shape.heads * shape.seq_len * shape.seq_len);
      std::uint64_t want_device = plain_held.device - (L - 1) * internals, want_host = 0;
      if (c.cpu) want_device -= (L - 1) * 4 * BT * C, want_host = (L + 1) * 4 * BT * C;
      EXPECT_EQ(held.device, want_device) << shape.describe() << " " << mode_name(c);
      EXPECT_EQ(held.host, want_host) << shape.describe() << " " << mode_name(c);
      if (L > 1) { EXPECT_LT(held.device, plain_held.device); }
    }
  }
}

TEST(GptCheckpointing, CpuWithoutCheckpointingIsAConfigError) {
  Ledger ledger;
  const GptCheckpointing cpu_only{false, true};
  EXPECT_THROW(Gpt(GptShape{}, 1, ledger, cpu_only), ConfigError);
  EXPECT_THROW(Gpt::activation_bytes(GptShape{}, 1, cpu_only), ConfigError);
}

// Engine runs (4 steps of AdamW with clipping): every stage, with offload, with and without
// checkpointing, on 2 thread ranks: the same weights, bit for bit; for the GPT and for the LLaMA
// (whose checkpointing has no cpu mode yet: Llama refuses it).
TEST(ModelCheckpointing, BitIdenticalInEveryStageAndWithOffload) {
  struct Placement { int stage; bool opt, param; };
  const Placement placements[] = {{0, false, false}, {1, false, false}, {2, false, false}, {3, false, false},
                                  {2, true, false},  {3, true, true}};
  const int n = 2;
  for (bool llama : {false, true})
  for (const Placement& p : placements) {
    std::vector<float> reference;
    for (const GptCheckpointing& c : kModes) {
      if (llama && c.cpu) continue;
      testing::GptRun run;
      run.shape = {48, 12, 16, 3, 2};
      if (llama) run.llama = testing::tiny_llama(false);
      run.stage = p.stage, run.offload_optimizer = p.opt, run.offload_params = p.param, run.checkpointing = c;
      const std::vector<std::vector<float>> params = testing::train_gpt_threads(run, n);
      ASSERT_TRUE(same_bits(params[1], params[0])) << run.model_label() << " stage " << p.stage << " " << mode_name(c);
      if (!c.enabled) reference = params[0];
      EXPECT_TRUE(same_bits(params[0], reference)) << run.model_label() << " stage " << p.stage << (p.opt ? "+opt" : "") << (p.param ? "+param" : "")
                                                   << ": " << mode_name(c) << " differs from no checkpointing";
    }
  }
}

// The LLaMA's checkpointing keeps less: its activation bytes with it are below those without, by
// the L-1 blocks of internals it does not hold; cpu checkpointing is refused with a clear error.
TEST(ModelCheckpointing, LlamaHoldsOneBlockAndRefusesCpuCheckpointing) {
  const LlamaShape s = testing::tiny_llama(false);
  for (const GptCheckpointing& c : {kModes[0], kModes[1]}) {
    Ledger ledger;
    Llama model(s, 2, ledger, c);
    EXPECT_EQ(ledger.usage(Tier::kDevice).current[static_cast<int>(Category::kActivations)], Llama::activation_bytes(s, 2, c).device)
        << mode_name(c);
  }
  EXPECT_LT(Llama::activation_bytes(s, 2, kModes[1]).total(), Llama::activation_bytes(s, 2, kModes[0]).total());
  Ledger ledger;
  try {
    Llama model(s, 2, ledger, kModes[2]);
    ADD_FAILURE() << "cpu checkpointing accepted for the LLaMA";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cpu_checkpointing is not implemented for model.type llama"), std::string::npos) << e.what();
  }
}

// A backend without LLaMA kernels (cuda, for now) is refused by the registry, naming those that
// have them; the cpu backends have them.
TEST(ModelCheckpointing, LlamaKernelsOnlyWhereRegistered) {
  EXPECT_NO_THROW(require_llama_kernels("cpu", "[config] model.type llama"));
  EXPECT_NO_THROW(require_llama_kernels("strict", "[config] model.type llama"));
  try {
    require_llama_kernels("cuda", "[config] model.type llama");
    ADD_FAILURE() << "cuda has no LLaMA kernels, but was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("[config] model.type llama: device cuda has no LLaMA kernels yet; the devices that have them: cpu"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zero
