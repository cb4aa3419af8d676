// Test helpers for checkpoints: a small training setup on thread ranks, and an independent
// reader of the documented rank-file format (README: Checkpoints) that consolidates a tensor.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/thread_world.h"
#include "config/config.h"
#include "engine/engine.h"
#include "model/gpt.h"
#include "partition/init.h"
#include "train/trainer.h"

namespace zero::testing {

namespace fs = std::filesystem;

// A fresh directory under the build's temporary folder.
inline std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("zero_ckpt_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

// ~40 KB of word-like text, deterministic, so that tests need no data file.
inline std::string text_file(const std::string& dir) {
  const std::string path = dir + "/text.txt";
  std::ofstream out(path);
  const char* words[] = {"zero ", "shard ", "rank ", "unit ", "the ", "of ", "gradient ", "moment ", "adam ", "step\n"};
  for (int i = 0; i < 6000; ++i) out << words[static_cast<int>(counter_uniform(7, static_cast<std::uint64_t>(i)) * 10)];
  return path;
}

struct TrainSetup {
  int ranks = 2;
  int stage = 1;
  std::string optimizer = "AdamW";  // optimizer.type
  std::string offload = "none";  // none, optimizer, optimizer+param, param (offload_param alone), nvme, nvme+param, nvme+nvme (both on disk), optimizer+nvme (parameters alone on disk)
  int steps = 6;
  int n_layer = 2;
  int n_embd = 16;
  double lr = 5e-3;
  std::string precision = "fp32";  // fp32, bf16, fp16 (dynamic loss scaling unless loss_scale > 0)
  double loss_scale = 0;           // fp16.loss_scale: 0 dynamic
  int initial_scale_power = 16;    // fp16: the first dynamic scale is 2^power
  int loss_scale_window = 1000;    // fp16: clean steps before the scale doubles
  bool delayed_update = false;     // offload_optimizer.delayed_update (warm-up of delayed_warmup steps)
  int delayed_warmup = 2;
  double gradient_clipping = 1.0;
  nlohmann::json zenflow;          // zero_optimization.zenflow (null: none; needs offload "optimizer" and no clipping)
};

inline TrainConfig make_config(const TrainSetup& s) {
  nlohmann::json j = {{"train_micro_batch_size_per_gpu", 12 / s.ranks},
                      {"gradient_accumulation_steps", 1},
                      {"optimizer", {{"type", s.optimizer}, {"params", {{"lr", s.lr}, {"weight_decay", 0.1}}}}},
                      {"scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_min_lr", 0}, {"warmup_max_lr", 5e-3}, {"warmup_num_steps", 4}, {"warmup_type", "linear"}}}}},
                      {"gradient_clipping", s.gradient_clipping},
                      {"zero_optimization", {{"stage", s.stage}}},
                      {"train_steps", s.steps},
                      {"model", {{"type", "gpt"}, {"vocab_size", 256}, {"n_ctx", 16}, {"n_embd", s.n_embd}, {"n_layer", s.n_layer}, {"n_head", 2}}}};
  if (s.offload == "param") {
    j["zero_optimization"]["offload_param"] = {{"device", "cpu"}};
  } else if (s.offload.rfind("nvme", 0) == 0) {  // the NVMe tier, swapping in the working folder, in sub-groups of 100
    j["zero_optimization"]["offload_optimizer"] = {{"device", "nvme"}, {"nvme_path", std::filesystem::absolute(".").string()}, {"buffer_count", 2}};
    j["zero_optimization"]["sub_group_size"] = 100;
    if (s.offload == "nvme+param") j["zero_optimization"]["offload_param"] = {{"device", "cpu"}};
    if (s.offload == "nvme+nvme") {
      j["zero_optimization"]["offload_param"] = {{"device", "nvme"}, {"nvme_path", std::filesystem::absolute(".").string()}, {"buffer_count", 2}};
    }
  } else if (s.offload != "none") {
    j["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
    if (s.offload == "optimizer+param") j["zero_optimization"]["offload_param"] = {{"device", "cpu"}};
    if (s.offload == "optimizer+nvme") {
      j["zero_optimization"]["offload_param"] = {{"device", "nvme"}, {"nvme_path", std::filesystem::absolute(".").string()}, {"buffer_count", 2}};
    }
    if (s.delayed_update) {
      j["zero_optimization"]["offload_optimizer"]["delayed_update"] = {{"enabled", true}, {"warmup_steps", s.delayed_warmup}};
    }
  }
  if (!s.zenflow.is_null()) j["zero_optimization"]["zenflow"] = s.zenflow;
  if (s.precision == "bf16") j["bf16"] = {{"enabled", true}};
  if (s.precision == "fp16") {
    j["fp16"] = {{"enabled", true}, {"loss_scale", s.loss_scale}, {"initial_scale_power", s.initial_scale_power},
                 {"loss_scale_window", s.loss_scale_window}, {"hysteresis", 2}, {"min_loss_scale", 1}};
  }
  return parse_config(j, s.ranks);
}

struct RunOutcome {
  TrainResult result;  // rank 0's
  int steps_run = 0;   // on_step calls on rank 0
  std::vector<std::string> notes;  // rank 0's checkpoint messages
};

// Trains on thread ranks with the options (data and checkpoint options filled in by the caller).
inline RunOutcome run_training(const TrainSetup& s, const std::string& data, const CheckpointOptions& ck) {
  RunOutcome out;
  ThreadWorld world(s.ranks);
  world.run([&](int r) {
    auto comm = world.communicator(r);
    TrainOptions o;
    o.config = make_config(s);
    o.data_path = data;
    o.val_windows = 12;
    o.checkpoints = ck;
    o.on_step = [&](const StepMetrics&) { ++out.steps_run; };
    o.on_note = [&](const std::string& note) { out.notes.push_back(note); };
    TrainResult res = train(o, *comm);
    if (r == 0) out.result = std::move(res);
  });
  return out;
}

struct SplitRuns {
  RunOutcome straight, resumed;
};

// s.steps straight, and s.steps / 2 + save (into DIR/first) + resume to s.steps. With
// `save_final`, both save at their end too (DIR/straight, DIR/second), so that their final
// optimizer states can be compared.
inline SplitRuns straight_and_resumed(TrainSetup s, const std::string& data, const std::string& dir, bool save_final) {
  const int steps = s.steps;
  SplitRuns out;
  CheckpointOptions straight;
  if (save_final) straight.save_dir = dir + "/straight";
  out.straight = run_training(s, data, straight);
  s.steps = steps / 2;
  CheckpointOptions first;
  first.save_dir = dir + "/first";
  run_training(s, data, first);
  s.steps = steps;
  CheckpointOptions second;
  second.resume = dir + "/first";
  if (save_final) second.save_dir = dir + "/second";
  out.resumed = run_training(s, data, second);
  return out;
}

// Tensor t of unit u, consolidated in unpadded order, read from the rank files by the format's
// documented arithmetic alone (not the library's reader).
inline std::vector<float> consolidated(const std::string& dir, int u, int t) {
  std::ifstream in(dir + "/manifest.json");
  const nlohmann::json m = nlohmann::json::parse(in);
  const auto& units = m["units"];
  const std::size_t slice = units[u]["slice"], numel = units[u]["numel"];
  std::size_t shard_offset = 0;
  for (int v = 0; v < u; ++v) shard_offset += units[v]["slice"].get<std::size_t>();
  const std::size_t tensors = m["tensors"].size();
  std::vector<std::vector<char>> files;
  for (const auto& f : m["files"]) {
    std::ifstream bin(dir + "/" + f["name"].get<std::string>(), std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(bin), std::istreambuf_iterator<char>());
  }
  std::vector<float> out(numel);
  for (std::size_t e = 0; e < numel; ++e) {
    const std::size_t at = 4 * (tensors * shard_offset + t * slice + e % slice);
    std::memcpy(&out[e], files.at(e / slice).data() + at, 4);
  }
  return out;
}

// An engine over a small GPT (units of 4,224, 2,208 and 32 elements: uneven for N = 3 and 4)
// that can train on counter-based tokens; the tests' stand-in for the trainer.
struct Rig {
  GptShape shape{256, 8, 16, 2, 2};
  Ledger ledger;
  std::unique_ptr<Gpt> gpt;
  std::unique_ptr<Engine> engine;
  Rig(int stage, const std::string& offload, Communicator& comm, Dtype dtype = Dtype::kF32) {
    gpt = std::make_unique<Gpt>(shape, 12 / comm.size(), ledger);
    EngineConfig c;
    c.stage = stage;
    c.device = "strict";  // the state is reached only through the device seam
    c.adam.lr = 1e-2f;
    c.adam.weight_decay = 0.1f;
    c.offload.optimizer = offload != "none" && offload != "param";
    c.offload.params_nvme = offload == "nvme+nvme" || offload == "optimizer+nvme";
    c.offload.params = offload == "optimizer+param" || offload == "param" || offload == "nvme+param" || c.offload.params_nvme;  // the parameter slices on disk too, through 2 buffers
    c.offload.param_nvme.path = std::filesystem::absolute(".").string();
    c.offload.param_nvme.buffer_count = 2;
    c.offload.optimizer_nvme = offload.rfind("nvme", 0) == 0;  // swapping in the working folder, in sub-groups of 100
    c.offload.nvme.path = std::filesystem::absolute(".").string();
    c.offload.nvme.sub_group_size = 100;
    c.offload.nvme.buffer_count = 2;
    c.offload.delayed_update = offload == "optimizer+dpu";  // from the first step: in flight after every step
    c.precision.compute = dtype;
    c.precision.loss_scaler.static_scale = 256;  // fp16: no step skipped, the masters move every step
    engine = std::make_unique<Engine>(c, *gpt, comm, ledger);
  }
  void train(int steps, Communicator& comm) {
    const int B = gpt->micro_batch(), T = shape.seq_len;
    std::vector<std::int32_t> in(static_cast<std::size_t>(B) * T), tgt(in.size());
    for (int s = 0; s < steps; ++s) {
      for (std::size_t i = 0; i < in.size(); ++i) {
        const std::uint64_t at = static_cast<std::uint64_t>(comm.rank()) * in.size() + i;
        in[i] = static_cast<std::int32_t>(counter_uniform(s, at) * 256);
        tgt[i] = static_cast<std::int32_t>(counter_uniform(s + 1000, at) * 256);
      }
      gpt->set_batch(in.data(), tgt.data());
      engine->train_step();
    }
  }
};

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace zero::testing
