// The engine: ZeRO-sharded data-parallel training of a Module over a Communicator.
//
//   Engine engine(config, model, comm, ledger);   // checks, shards and initialises
//   model.set_batch(...);                           // this rank's micro-batch (model-specific)
//   float loss = engine.train_step();               // forward, backward + reduce, Adam, gather
//
// Every stage gives the same parameters, bit for bit, for a given world size and seed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "engine/module.h"
#include "memory/ledger.h"
#include "optim/adamw.h"
#include "partition/layout.h"

namespace zero {

class Stage;

struct EngineConfig {
  int stage = 0;            // ZeRO stage: 0 (DDP), 1, 2 or 3
  AdamConfig adam;
  std::uint64_t seed = 1234;  // initialisation (counter-based: the same whatever the world size)
};

class Engine {
 public:
  // Validates the config, checks (with one small collective) that every rank describes the same
  // model, then allocates and initialises this rank's state. Throws ConfigError on bad input.
  Engine(const EngineConfig& config, Module& module, Communicator& comm, Ledger& ledger);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // One optimizer step on the micro-batch the module holds. Returns this rank's loss.
  float train_step();

  // Every parameter, whole and unpadded, in layout order. A collective in stage 3.
  std::vector<float> full_parameters();

  const FlatLayout& layout() const { return layout_; }
  const EngineConfig& config() const { return config_; }
  std::int64_t steps_done() const { return step_; }
  // Bytes moved by the last train_step, by kind of collective.
  const Traffic& last_step_traffic() const { return last_traffic_; }

 private:
  void forward();
  void backward();
  UnitViews views_for(int u, bool with_grads);

  EngineConfig config_;
  Module& module_;
  Communicator& comm_;
  FlatLayout layout_;
  std::unique_ptr<Stage> stage_;
  std::int64_t step_ = 0;
  Traffic last_traffic_;
};

}  // namespace zero
