// The corpus: real config files from DeepSpeed, DeepSpeedExamples, Hugging Face transformers and
// accelerate and fine-tuning projects (tests/config/corpus/README.md names each source). Each
// either loads as it is, or fails with every one of its problems in one message, and every
// problem left is one the README lists as not supported.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "common/error.h"
#include "config/config.h"

namespace zero {
namespace {

using nlohmann::json;

std::string corpus_dir() { return std::string(ZERO_TEST_DATA_DIR) + "/config/corpus"; }

// What a file does when run as `zero train --config FILE` (with --micro-batch 4 where the file
// leaves the micro-batch to the launcher, as the Trainer's --per_device_train_batch_size does):
// the subjects of its problems, the key path each message is about. Empty: it loads.
const std::map<std::string, std::set<std::string>>& expected() {
  static const std::map<std::string, std::set<std::string>> kExpected = {
      {"acc_sp_alst.json", {}},
      {"acc_zero_stage1.json", {}},
      {"acc_zero_stage3_offload.json", {}},
      {"alpaca_offload_opt_param.json", {}},
      {"ds_accelerator.json", {}},
      {"ds_bingbert_squad_fp32.json", {}},
      {"ds_hybrid_engine.json", {"zero_optimization.offload_param"}},
      {"ds_megatron_gpt2_perf_bs16.json", {}},
      {"ds_megatron_gpt2_scheduler.json", {}},
      {"ds_megatron_gpt2_zero0_gas3.json", {}},
      {"ds_megatron_gpt2_zero2_cpu_offload.json", {}},
      {"ds_megatron_gpt2_zero2_gas3.json", {}},
      {"ds_sdma_allgather_zero3.json", {}},
      {"ds_torch_compile_z2.json", {}},
      {"ds_torch_compile_z3.json", {}},
      {"ds_unit_batch.json", {}},
      {"ds_unit_lamb_fp32_grad_clip.json", {}},
      {"dse_autotuning_hf_fp16_z2.json", {}},
      {"dse_autotuning_hf_z1.json", {}},
      {"dse_bing_bert_01adam_nccl.json", {}},
      {"dse_bing_bert_lamb_seq128.json", {"sparse_attention"}},
      {"dse_bing_bert_onebitadam_nccl.json", {}},
      {"dse_bing_bert_pld_seq128.json", {"progressive_layer_drop"}},
      {"dse_bingbert_squad_bsz24.json", {}},
      {"dse_compression_cifar.json", {}},
      {"dse_gan.json", {}},
      {"dse_imagenet.json", {}},
      {"dse_imagenet_fp16_z1.json", {}},
      {"dse_pipeline_parallelism.json", {}},
      {"fastchat_ds_s3.json", {}},
      {"hana_stage2_offload.json", {}},
      {"hf_ds_config_zero2.json", {}},
      {"hf_ds_config_zero3.json", {"zero_optimization.reduce_bucket_size"}},
      {"llama_factory_ds_z2_offload.json", {}},
      {"llama_factory_ds_z3.json", {}},
      {"self_control_torch_adam.json", {"sparse_attention"}},
  };
  return kExpected;
}

// The refusals README.md lists as not supported ("What zero refuses"). fp16/bf16 are the
// mixed-precision issue's; the rest have their reason in the message.
bool listed_as_not_supported(const std::string& subject) {
  static const std::set<std::string> kListed = {"optimizer.type", "sparse_attention",
                                                "progressive_layer_drop",
                                                "zero_optimization.offload_param", "zero_optimization.reduce_bucket_size"};
  // The parameters of a refused optimizer are reported with it, to be removed when switching.
  return kListed.count(subject) > 0 || subject.rfind("optimizer.params.", 0) == 0;
}

// The key path a problem is about: the quoted path of an unknown key, else the message's first word.
std::string subject_of(const std::string& problem) {
  const std::string unknown = "unknown key '";
  if (problem.rfind(unknown, 0) == 0) return problem.substr(unknown.size(), problem.find('\'', unknown.size()) - unknown.size());
  return problem.substr(0, problem.find(' '));
}

// The problems of one ConfigError, without the "[config] file: " lead and the numbering.
std::vector<std::string> problems_of(const std::string& what, const std::string& path) {
  std::string body = what.substr(std::string("[config] ").size());
  if (body.rfind(path + ": ", 0) == 0) body = body.substr(path.size() + 2);
  if (body.find(" problems; fix them all, then run again:\n") == std::string::npos) return {body};
  std::vector<std::string> out;
  for (std::size_t at = body.find("\n  "); at != std::string::npos;) {
    const std::size_t next = body.find("\n  ", at + 1);
    std::string item = body.substr(at + 3, next == std::string::npos ? std::string::npos : next - at - 3);
    out.push_back(item.substr(item.find(". ") + 2));
    at = next;
  }
  return out;
}

struct Outcome {
  bool loads = false;
  std::set<std::string> subjects;
  std::size_t problems = 0;
};

Outcome run_file(const std::string& path, int world = 1) {
  json j = read_config_file(path);
  const bool needs_flag = !j.contains("train_micro_batch_size_per_gpu") && !j.contains("train_batch_size");
  if (needs_flag || j.value("train_micro_batch_size_per_gpu", json()) == "auto") apply_override(j, "train_micro_batch_size_per_gpu", 4);
  ConfigOptions options;
  options.source = path;
  Outcome o;
  try {
    parse_config(j, world, options);
    o.loads = true;
  } catch (const ConfigError& e) {
    for (const std::string& p : problems_of(e.what(), path)) o.subjects.insert(subject_of(p)), ++o.problems;
  }
  return o;
}

TEST(ConfigCorpus, EveryFileLoadsOrFailsWithAllItsProblemsAtOnce) {
  int files = 0, load = 0;
  std::set<std::string> seen;
  for (const auto& entry : std::filesystem::directory_iterator(corpus_dir())) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().filename().string();
    seen.insert(name);
    ++files;
    const auto want = expected().find(name);
    ASSERT_NE(want, expected().end()) << name << " has no expectation in config_corpus_test.cpp";
    const Outcome o = run_file(entry.path().string());
    EXPECT_EQ(o.subjects, want->second) << name;
    EXPECT_EQ(o.problems, want->second.size()) << name << ": one message per problem";
    for (const std::string& s : o.subjects) EXPECT_TRUE(listed_as_not_supported(s)) << name << ": " << s << " is not in the README's list";
    load += o.loads;
  }
  EXPECT_EQ(seen.size(), expected().size()) << "a file in the table is missing from the corpus";
  EXPECT_GE(files, 25);
  std::printf("[ measured ] %d corpus files: %d load unchanged\n", files, load);
}

TEST(ConfigCorpus, DocumentedExamplesLoad) {
  // With the world sizes their batch keys were written for (train = micro * accumulation * world).
  const std::pair<const char*, int> files[] = {{"ds_zero_stage1.json", 2}, {"ds_zero_stage2.json", 2}, {"ds_zero_stage2_2e8.json", 4},
                                               {"ds_zero_stage2_offload.json", 1}, {"ds_zero_stage3.json", 2}, {"ds_zero_stage3_offload.json", 8}};
  for (const auto& [f, world] : files) EXPECT_TRUE(run_file(std::string(ZERO_TEST_DATA_DIR) + "/config/" + f, world).loads) << f;
}

TEST(ConfigCorpus, ImagenetKeepsItsUnknownKeyAsAWarning) {
  const TrainConfig c = load_config(corpus_dir() + "/dse_imagenet.json", 1);
  EXPECT_EQ(c.unknown_keys, std::vector<std::string>{"cuda_visible_devices"});
  EXPECT_EQ(c.micro_batch_size, 256);
  const TrainConfig squad = load_config(corpus_dir() + "/ds_bingbert_squad_fp32.json", 1);
  EXPECT_FALSE(squad.engine.adam.bias_correction);
  EXPECT_EQ(squad.gradient_accumulation_steps, 8);  // 24 / 3 on one rank
}

}  // namespace
}  // namespace zero
