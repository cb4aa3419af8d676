// Test helper: a few engine steps of a tiny GPT, or of a tiny LLaMA (GptRun::llama set), on
// synthetic tokens, on one rank of a world: the stage-equivalence tests run over both models.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "comm/communicator.h"
#include "comm/thread_world.h"
#include "engine/engine.h"
#include "model/gpt.h"
#include "model/llama.h"
#include "partition/init.h"

namespace zero::testing {

struct GptRun {
  int stage = 0;
  std::string device = "cpu";
  int steps = 4;
  int global_batch = 4;  // sequences per step
  GptShape shape{32, 8, 16, 2, 2};
  Dtype dtype = Dtype::kF32;  // compute dtype: bf16/f16 train in mixed precision
  GptCheckpointing checkpointing;
  bool offload_optimizer = false;
  bool offload_params = false;
  // The model: the GPT of `shape`, or, when set, this LLaMA (its checkpointing as the GPT's).
  std::optional<LlamaShape> llama;
  std::string model_label() const { return llama ? "LLaMA " + llama->describe() : "GPT"; }
};

// A tiny LLaMA with grouped-query attention (4 query heads, 2 key/value heads), C = 24, odd T.
inline LlamaShape tiny_llama(bool tied) {
  LlamaShape s;
  s.vocab_size = 32, s.seq_len = 7, s.hidden = 24, s.intermediate = 40, s.layers = 2, s.heads = 4, s.kv_heads = 2;
  s.tie_word_embeddings = tied;
  return s;
}

// Every rank of the world calls it; returns this rank's whole weights after the run.
inline std::vector<float> train_gpt(const GptRun& run, Communicator& comm, Ledger& ledger) {
  const int B = run.global_batch / comm.size(), T = run.llama ? run.llama->seq_len : run.shape.seq_len;
  const int V = run.llama ? run.llama->vocab_size : run.shape.vocab_size;
  std::unique_ptr<Gpt> gpt_model;
  std::unique_ptr<Llama> llama_model;
  // As zero train: a bf16 run's matrix products in bf16 (where the CPU has bf16 instructions).
  const GptCompute compute{run.device, run.dtype == Dtype::kBf16 ? Dtype::kBf16 : Dtype::kF32};
  if (run.llama) {
    llama_model = std::make_unique<Llama>(*run.llama, B, ledger, run.checkpointing, compute);
  } else {
    gpt_model = std::make_unique<Gpt>(run.shape, B, ledger, run.checkpointing, compute);
  }
  Module& model = run.llama ? static_cast<Module&>(*llama_model) : *gpt_model;
  EngineConfig config;
  config.stage = run.stage;
  config.offload.optimizer = run.offload_optimizer;
  config.offload.params = run.offload_params;
  config.device = run.device;
  config.adam.lr = 1e-2f;
  config.adam.weight_decay = 0.1f;
  config.gradient_clipping = 1.0f;
  config.precision.compute = run.dtype;
  Engine engine(config, model, comm, ledger);
  std::vector<std::int32_t> in(static_cast<std::size_t>(B) * T), tgt(in.size());
  for (int s = 0; s < run.steps; ++s) {
    for (int b = 0; b < B; ++b) {  // sequence (rank * B + b) of global batch s: counter-based tokens
      const std::uint64_t seq = static_cast<std::uint64_t>(comm.rank() * B + b);
      for (int t = 0; t <= T; ++t) {
        const auto tok = static_cast<std::int32_t>(counter_uniform(s * 1000003ULL + seq, t) * V);
        if (t < T) in[b * T + t] = tok;
        if (t > 0) tgt[b * T + t - 1] = tok;
      }
    }
    if (run.llama) {
      llama_model->set_batch(in.data(), tgt.data());
    } else {
      gpt_model->set_batch(in.data(), tgt.data());
    }
    engine.train_step();
  }
  return engine.full_parameters();
}

// The run on n thread ranks: each rank's whole weights after it.
inline std::vector<std::vector<float>> train_gpt_threads(const GptRun& run, int n) {
  ThreadWorld world(n);
  std::vector<std::vector<float>> params(n);
  world.run([&](int r) {
    Ledger ledger;
    auto comm = world.communicator(r, &ledger);
    params[r] = train_gpt(run, *comm, ledger);
  });
  return params;
}

}  // namespace zero::testing
