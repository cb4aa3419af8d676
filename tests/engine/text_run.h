// Learning tests' one run: a config trained on the default text (the Jargon File) on thread
// ranks, as `zero train` would, and rank 0's result (final losses, the weights' SHA-256).
#pragma once

#include <nlohmann/json.hpp>

#include "comm/thread_world.h"
#include "config/config.h"
#include "data/load.h"
#include "train/trainer.h"

namespace zero {

// `ranks_per_node`: the thread ranks as nodes of that many (0: one node).
inline TrainResult train_on_default_text(const nlohmann::json& config, int ranks, int ranks_per_node = 0) {
  ThreadWorld world(ranks, {}, ranks_per_node);
  TrainResult out{};
  world.run([&](int r) {
    Ledger ledger;
    auto comm = world.communicator(r, &ledger);
    TrainOptions o;
    o.config = parse_config(config, ranks);
    o.data_path = data::default_text_path();
    o.ledger = &ledger;
    TrainResult result = train(o, *comm);
    if (r == 0) out = std::move(result);
  });
  return out;
}

}  // namespace zero
