// Checkpoints of mixed-precision (bf16, fp16) and delayed-update (ZeRO-Offload's DPU) runs:
// 20 steps straight and 10 + save + resume + 10 give the same weights, the same loss curve, the
// same loss-scale history and the same final optimizer state (every byte of the rank files).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "checkpoint/manifest.h"
#include "checkpoint/checkpoint_util.h"

namespace zero {
namespace {

using namespace zero::testing;

struct MixedCase {
  const char* precision;
  int stage;
  const char* offload;
  bool delayed = false;
  double loss_scale = 0;  // fp16: a static scale (the delayed update refuses dynamic scaling)
};

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every rank file of the checkpoint at `step` in save directory `dir`, concatenated.
std::string rank_files(const std::string& dir, std::int64_t step) {
  const std::string at = dir + "/" + checkpoint::step_dir_name(step);
  const checkpoint::Manifest m = checkpoint::read_manifest(at + "/manifest.json");
  std::string all;
  for (const checkpoint::FileRecord& f : m.files) all += bytes_of(at + "/" + f.name);
  return all;
}

class MixedResume : public ::testing::TestWithParam<MixedCase> {};

TEST_P(MixedResume, TwentyStraightEqualsTenSaveResumeTen) {
  const MixedCase p = GetParam();
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(name.begin(), name.end(), '/', '_');
  const std::string dir = temp_dir("mixed_" + name);
  const std::string data = text_file(dir);
  TrainSetup s;
  s.steps = 20;
  s.stage = p.stage;
  s.offload = p.offload;
  s.precision = p.precision;
  s.delayed_update = p.delayed;
  s.loss_scale = p.loss_scale;
  // fp16: a first scale so high that the first steps overflow and are skipped, and a short
  // window, so that the scaler's state at step 10 (scale, clean steps, hysteresis) matters.
  s.initial_scale_power = 40;
  s.loss_scale_window = 3;
  const auto [straight, resumed] = straight_and_resumed(s, data, dir, true);

  EXPECT_EQ(resumed.steps_run, 10);
  EXPECT_EQ(resumed.result.first_step, 10);
  EXPECT_EQ(resumed.result.weights_sha256, straight.result.weights_sha256);
  ASSERT_EQ(resumed.result.losses.size(), 10u);
  ASSERT_EQ(straight.result.losses.size(), 20u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(resumed.result.losses[i], straight.result.losses[10 + i]) << "step " << 11 + i;
  EXPECT_EQ(resumed.result.final_val_loss, straight.result.final_val_loss);
  EXPECT_EQ(resumed.result.skipped_steps, straight.result.skipped_steps);
  EXPECT_EQ(resumed.result.final_loss_scale, straight.result.final_loss_scale);
  // The masters and moments after step 20, every byte.
  EXPECT_TRUE(rank_files(dir + "/second", 20) == rank_files(dir + "/straight", 20)) << "the final optimizer state differs";
  if (std::string(p.precision) == "fp16" && p.loss_scale == 0) {
    EXPECT_GT(straight.result.skipped_steps, 0) << "the test meant the first steps to overflow";
  }
  // The manifest says what precision the masters serve.
  std::ifstream in(dir + "/first/step-00000010/manifest.json");
  const nlohmann::json m = nlohmann::json::parse(in);
  EXPECT_EQ(m["info"]["precision"]["compute"], std::string(p.precision) == "bf16" ? "bf16" : std::string(p.precision) == "fp16" ? "f16" : "f32");
  EXPECT_EQ(m["info"]["precision"]["master"], "f32");
}

INSTANTIATE_TEST_SUITE_P(
    PrecisionsStagesOffload, MixedResume,
    ::testing::Values(MixedCase{"bf16", 0, "none"}, MixedCase{"bf16", 1, "none"}, MixedCase{"bf16", 2, "none"},
                      MixedCase{"bf16", 3, "none"}, MixedCase{"bf16", 2, "optimizer"}, MixedCase{"bf16", 3, "optimizer+param"},
                      MixedCase{"fp16", 0, "none"}, MixedCase{"fp16", 1, "none"}, MixedCase{"fp16", 2, "none"},
                      MixedCase{"fp16", 3, "none"}, MixedCase{"fp16", 1, "optimizer"}, MixedCase{"fp16", 3, "optimizer+param"},
                      // offload_param alone: the 16-bit parameters' home in the host tier, the masters on the device.
                      MixedCase{"bf16", 3, "param"}, MixedCase{"fp16", 3, "param"},
                      // The delayed update: fp32, bf16, and fp16 with a static scale.
                      MixedCase{"fp32", 2, "optimizer", true}, MixedCase{"bf16", 3, "optimizer", true},
                      MixedCase{"fp16", 1, "optimizer", true, 1024}),
    [](const ::testing::TestParamInfo<MixedCase>& i) {
      const MixedCase& p = i.param;
      const std::string o = p.offload;
      const std::string off = o == "none" ? "" : o == "param" ? "_offload_param_alone" : o == "optimizer+param" ? "_offload_param" : "_offload";
      return cat(p.precision, "_stage", p.stage, off, p.delayed ? "_delayed_update" : "");
    });

// A checkpoint saved with the delayed update in flight holds the parameters in use as a fourth
// tensor; a run without the delayed update applies the pending update on resume and says so.
TEST(DelayedUpdateCheckpoint, ResumedWithoutItAppliesThePendingUpdate) {
  const std::string dir = temp_dir("delayed_applied");
  const std::string data = text_file(dir);
  TrainSetup s;
  s.stage = 2;
  s.offload = "optimizer";
  s.delayed_update = true;
  s.steps = 4;
  CheckpointOptions save;
  save.save_dir = dir + "/ck";
  run_training(s, data, save);
  const checkpoint::Manifest m = checkpoint::read_manifest(dir + "/ck/step-00000004/manifest.json");
  EXPECT_EQ(m.tensors, (std::vector<std::string>{"master", "exp_avg", "exp_avg_sq", "params_in_use"}));
  s.delayed_update = false;
  s.steps = 6;
  CheckpointOptions resume;
  resume.resume = dir + "/ck";
  const RunOutcome out = run_training(s, data, resume);
  EXPECT_EQ(out.steps_run, 2);
  ASSERT_FALSE(out.notes.empty());
  EXPECT_NE(out.notes[0].find("the delayed update in flight at the save was applied now"), std::string::npos) << out.notes[0];
}

// ZenFlow (2 ranks, stages 1-3; the host tier, and the NVMe tier in the test's folder): warm-up 2
// steps, a CPU update every 3 (after steps 5, 8, 11, ...). Saved at step K = steps / 2: right
// after a CPU update (K 5), with a step's gradient summed for the next (K 6), with overlap_step
// while an update is in flight and a step summed (K 6), and in the warm-up, before any column is
// chosen (K 2). The straight and resumed runs end with the same weights, losses and final state
// bytes.
struct ZenflowCase {
  const char* name;
  int steps;
  bool overlap;
  int summed;      // at the save
  bool in_flight;  // at the save
  int stage;
  const char* offload = "optimizer";  // "nvme": the CPU's state and the sum in the swap file
};

void PrintTo(const ZenflowCase& c, std::ostream* os) { *os << c.name; }

class ZenflowResume : public ::testing::TestWithParam<ZenflowCase> {};

TrainSetup zenflow_setup(bool overlap, const char* offload = "optimizer") {
  TrainSetup s;
  s.stage = 2;
  s.offload = offload;
  s.gradient_clipping = 0;
  s.n_embd = 32;
  s.n_layer = 1;
  s.zenflow = {{"topk_ratio", 0.25}, {"update_interval", 3}, {"full_warm_up_rounds", 2}, {"overlap_step", overlap}};
  return s;
}

TEST_P(ZenflowResume, StraightEqualsSaveResume) {
  const ZenflowCase p = GetParam();
  const std::string dir = temp_dir(cat("zenflow_", p.name));
  const std::string data = text_file(dir);
  TrainSetup s = zenflow_setup(p.overlap, p.offload);
  s.steps = p.steps;
  s.stage = p.stage;
  const auto [straight, resumed] = straight_and_resumed(s, data, dir, true);
  const int k = p.steps / 2;
  const checkpoint::Manifest m = checkpoint::read_manifest(cat(dir, "/first/", checkpoint::step_dir_name(k), "/manifest.json"));
  EXPECT_EQ(m.tensors, checkpoint::zenflow_tensor_names());
  EXPECT_EQ(m.zenflow["summed"], p.summed);
  EXPECT_EQ(m.zenflow["in_flight"], p.in_flight);
  EXPECT_EQ(resumed.steps_run, p.steps - k);
  ASSERT_FALSE(resumed.notes.empty());
  EXPECT_EQ(resumed.notes[0].find("applied now"), std::string::npos) << resumed.notes[0];
  EXPECT_EQ(resumed.result.weights_sha256, straight.result.weights_sha256);
  ASSERT_EQ(resumed.result.losses.size(), static_cast<std::size_t>(p.steps - k));
  for (int i = 0; i < p.steps - k; ++i) EXPECT_EQ(resumed.result.losses[i], straight.result.losses[k + i]) << "step " << k + i + 1;
  EXPECT_TRUE(rank_files(dir + "/second", p.steps) == rank_files(dir + "/straight", p.steps)) << "the final optimizer state differs";
}

INSTANTIATE_TEST_SUITE_P(HostAndNvmeTiers, ZenflowResume,
                         ::testing::Values(ZenflowCase{"stage2_in_warm_up", 4, false, 0, false, 2},
                                           ZenflowCase{"stage1_after_update", 10, false, 0, false, 1},
                                           ZenflowCase{"stage2_between_updates", 12, false, 1, false, 2},
                                           ZenflowCase{"stage3_overlap_in_flight", 12, true, 1, true, 3},
                                           ZenflowCase{"stage2_nvme_overlap_in_flight", 12, true, 1, true, 2, "nvme"}),
                         [](const ::testing::TestParamInfo<ZenflowCase>& i) { return std::string(i.param.name); });

// A ZenFlow checkpoint does not reshard (each rank's columns are its own): another rank count is
// refused before any step, naming both, and so is a run without ZenFlow. A plain offload
// checkpoint starts ZenFlow afresh from it.
TEST(ZenflowCheckpoint, OtherRanksRefusedPlainCheckpointStartsZenflow) {
  const std::string dir = temp_dir("zenflow_reshard");
  const std::string data = text_file(dir);
  TrainSetup s = zenflow_setup(false);
  s.steps = 4;
  CheckpointOptions save;
  save.save_dir = dir + "/zf";
  run_training(s, data, save);
  s.ranks = 1;
  s.steps = 6;
  CheckpointOptions resume;
  resume.resume = dir + "/zf";
  int steps = -1;
  try {
    steps = run_training(s, data, resume).steps_run;
    ADD_FAILURE() << "resumed at another rank count";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("saved by 2 ranks at stage 2; this run has 1 at stage 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not reshard: resume with 2 ranks at stage 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(steps, -1);
  s = zenflow_setup(false);
  s.zenflow = nullptr;
  try {
    steps = run_training(s, data, resume).steps_run;
    ADD_FAILURE() << "resumed without ZenFlow";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("which a run without ZenFlow cannot continue"), std::string::npos) << e.what();
  }
  EXPECT_EQ(steps, -1);

  // Plain offload for 4 steps, then ZenFlow from its checkpoint: the same weights as ZenFlow
  // straight with a warm-up of 4 (plain offload's steps), its columns chosen at step 5 alike.
  TrainSetup plain = zenflow_setup(false);
  plain.zenflow = nullptr;
  plain.steps = 4;
  save.save_dir = dir + "/plain";
  run_training(plain, data, save);
  s = zenflow_setup(false);
  s.zenflow["full_warm_up_rounds"] = 4;
  s.steps = 8;
  const RunOutcome straight = run_training(s, data, CheckpointOptions{});
  resume.resume = dir + "/plain";
  const RunOutcome resumed = run_training(s, data, resume);
  EXPECT_EQ(resumed.steps_run, 4);
  EXPECT_EQ(resumed.result.weights_sha256, straight.result.weights_sha256);
  ASSERT_FALSE(resumed.notes.empty());
  EXPECT_NE(resumed.notes[0].find("ZenFlow starts afresh"), std::string::npos) << resumed.notes[0];

  // Past the warm-up (2 < 4) the fresh start chooses columns at once, at step 5, which is no
  // selection step: every whole row of each weight then has k = int(0.25 * columns) of them.
  s = zenflow_setup(false);
  s.steps = 5;
  resume.save_dir = dir + "/fresh";
  run_training(s, data, resume);
  const std::string at = dir + "/fresh/" + checkpoint::step_dir_name(5);
  const checkpoint::Manifest m = checkpoint::read_manifest(at + "/manifest.json");
  int matrices = 0;
  for (const nlohmann::json& p : m.parameters) {
    if (p["shape"].size() != 2) continue;
    const std::size_t rows = p["shape"][0], cols = p["shape"][1], first = p["unit_offset"];
    const std::vector<float> mask = consolidated(at, p["unit"], 5);  // zenflow_selected
    int chosen_rows = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      const auto row = mask.begin() + static_cast<std::ptrdiff_t>(first + r * cols);
      const auto ones = static_cast<std::size_t>(std::count(row, row + static_cast<std::ptrdiff_t>(cols), 1.0f));
      EXPECT_TRUE(ones == 0 || ones == cols / 4) << p["name"] << " row " << r << ": " << ones;
      chosen_rows += ones > 0;
    }
    EXPECT_GT(chosen_rows, 0) << p["name"];
    ++matrices;
  }
  EXPECT_GT(matrices, 0);
}

}  // namespace
}  // namespace zero
