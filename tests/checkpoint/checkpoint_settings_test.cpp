// The config's "train_checkpoints" section (ours) and the flags over it.
#include <gtest/gtest.h>

#include "config/config.h"
#include "train/checkpointing.h"

namespace zero {
namespace {

TrainConfig with_section(const nlohmann::json& section) {
  nlohmann::json j = {{"train_batch_size", 4}, {"train_checkpoints", section}};
  return parse_config(j, 1);
}

std::string config_error(const nlohmann::json& section) {
  try {
    with_section(section);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckpointSettings, ReadFromTheConfig) {
  const TrainConfig c = with_section({{"save", "ck"}, {"save_every", 50}, {"keep", 3}, {"resume", "old"}});
  EXPECT_EQ(c.checkpoints.save, "ck");
  EXPECT_EQ(c.checkpoints.save_every, 50);
  EXPECT_EQ(c.checkpoints.keep, 3);
  EXPECT_EQ(c.checkpoints.resume, "old");
  CheckpointOptions o;
  std::vector<std::string> overrides;
  apply_checkpoint_settings(c.checkpoints, {}, o, overrides);
  EXPECT_EQ(o.save_dir, "ck");
  EXPECT_EQ(o.save_every, 50);
  EXPECT_EQ(o.keep, 3);
  EXPECT_EQ(o.resume, "old");
  EXPECT_TRUE(overrides.empty());
}

TEST(CheckpointSettings, FlagsOverrideAndSaySo) {
  const TrainConfig c = with_section({{"save", "ck"}, {"save_every", 50}});
  CheckpointFlags f;
  f.save_every = 10;
  f.keep = 2;          // the file has no keep: not an override
  f.save = "ck";       // the same value: not an override
  CheckpointOptions o;
  std::vector<std::string> overrides;
  apply_checkpoint_settings(c.checkpoints, f, o, overrides);
  EXPECT_EQ(o.save_dir, "ck");
  EXPECT_EQ(o.save_every, 10);
  EXPECT_EQ(o.keep, 2);
  EXPECT_EQ(overrides, std::vector<std::string>{"--save-every 10 overrides train_checkpoints.save_every = 50"});
}

TEST(CheckpointSettings, BadValuesNameTheKey) {
  EXPECT_NE(config_error({{"save_every", -1}, {"save", "ck"}}).find("train_checkpoints.save_every"), std::string::npos);
  EXPECT_NE(config_error({{"keep", "two"}}).find("train_checkpoints.keep"), std::string::npos);
  EXPECT_NE(config_error({{"save_evry", 5}}).find("train_checkpoints.save_evry"), std::string::npos);
  EXPECT_NE(config_error({{"save", ""}}).find("train_checkpoints.save"), std::string::npos);
}

TEST(CheckpointSettings, SaveEveryWithoutADirectoryIsAnError) {
  const TrainConfig c = with_section({{"save_every", 5}});
  CheckpointOptions o;
  std::vector<std::string> overrides;
  try {
    apply_checkpoint_settings(c.checkpoints, {}, o, overrides);
    FAIL() << "save_every without a directory was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("add --save DIR (or train_checkpoints.save)"), std::string::npos) << e.what();
  }
  CheckpointFlags f;
  f.save = "ck";  // the flag supplies the directory
  apply_checkpoint_settings(c.checkpoints, f, o, overrides);
  EXPECT_EQ(o.save_every, 5);
}

TEST(EvalSettings, ReadFromTheConfig) {
  nlohmann::json j = {{"train_batch_size", 4}, {"train_eval", {{"every", 25}, {"batches", 2}}}};
  const TrainConfig c = parse_config(j, 1);
  EXPECT_EQ(c.eval.every, 25);
  EXPECT_EQ(c.eval.batches, 2);
  j["train_eval"] = {{"batches", 0}};
  EXPECT_THROW(parse_config(j, 1), ConfigError);
  j["train_eval"] = {{"evry", 3}};
  try {
    parse_config(j, 1);
    FAIL() << "a misspelt key was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("train_eval.evry"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zero
