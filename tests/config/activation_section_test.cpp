// DeepSpeed's activation_checkpointing section: each key implemented with DeepSpeed's meaning,
// accepted as a no-op where zero already does it, or refused with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/error.h"
#include "config/config.h"

namespace zero {
namespace {

nlohmann::json with(const nlohmann::json& section, bool checkpoint = true) {
  return {{"train_micro_batch_size_per_gpu", 1},
          {"model", {{"n_layer", 3}, {"checkpoint_activations", checkpoint}}},
          {"activation_checkpointing", section}};
}

std::string error_of(const nlohmann::json& j) {
  try {
    parse_config(j, 1);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ActivationSection, ImplementedKeys) {
  const TrainConfig c = parse_config(with({{"cpu_checkpointing", true}, {"number_checkpoints", 3}}), 1);
  EXPECT_TRUE(c.model.checkpointing.enabled);
  EXPECT_TRUE(c.model.checkpointing.cpu);
  const TrainConfig off = parse_config(with({{"number_checkpoints", false}}, false), 1);
  EXPECT_FALSE(off.model.checkpointing.enabled);
  EXPECT_FALSE(off.model.checkpointing.cpu);
}

TEST(ActivationSection, NoOpKeysAreListedAsIgnored) {
  // partition_activations: no model-parallel ranks to split across, as in DeepSpeed at a model-parallel size of 1.
  const TrainConfig c = parse_config(
      with({{"contiguous_memory_optimization", true}, {"synchronize_checkpoint_boundary", true}, {"partition_activations", true}}), 1);
  for (const char* key : {"activation_checkpointing.contiguous_memory_optimization", "activation_checkpointing.synchronize_checkpoint_boundary",
                          "activation_checkpointing.partition_activations"}) {
    EXPECT_NE(std::find(c.ignored_keys.begin(), c.ignored_keys.end(), key), c.ignored_keys.end()) << key;
  }
}

TEST(ActivationSection, RefusalsSayWhy) {
  EXPECT_NE(error_of(with({{"profile", true}})).find("zero bench train --activation-checkpointing"), std::string::npos);
  EXPECT_NE(error_of(with({{"number_checkpoints", 5}})).find("n_layer = 3"), std::string::npos);
  EXPECT_NE(error_of(with({{"number_checkpoints", "x"}})).find("must be an integer"), std::string::npos);
  EXPECT_NE(error_of(with({{"cpu_checkpointing", true}}, false)).find("--activation-checkpointing"), std::string::npos);
  // All at once, in one message.
  const std::string all = error_of(with({{"number_checkpoints", 5}, {"profile", true}}));
  EXPECT_NE(all.find("number_checkpoints"), std::string::npos);
  EXPECT_NE(all.find("profile"), std::string::npos);
  EXPECT_EQ(error_of(with({{"partition_activations", false}, {"profile", false}})), "");
}

}  // namespace
}  // namespace zero
