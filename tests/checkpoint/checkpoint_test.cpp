// Sharded checkpoints on thread ranks: same-N resume bit for bit (stages 0-3, offload), exact
// resharding across world sizes and stages reading only overlapping byte ranges, and bad input.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <atomic>
#include <filesystem>
#include <fstream>

#include "checkpoint/loader.h"
#include "checkpoint/reshard.h"
#include "checkpoint/saver.h"
#include "checkpoint/shard_file.h"
#include "checkpoint/checkpoint_util.h"
#include "train/checkpointing.h"
#include "model/gpt.h"

namespace zero {
namespace {

using namespace zero::testing;
using checkpoint::Piece;

// ---- the arithmetic ----

// Every element of every asked range comes from exactly the rank and offset the format says,
// for unit sizes, world sizes and ranges across their ranges (padding: no piece).
TEST(Reshard, PiecesCoverExactlyTheWrittenElements) {
  for (std::size_t numel : {1u, 2u, 7u, 64u, 101u}) {
    for (int n = 1; n <= 5; ++n) {
      const std::size_t padded = (numel + n - 1) / n * n;
      checkpoint::UnitRecord u{"u", numel, padded, padded / n, 0};
      for (std::size_t first = 0; first < padded + 3; first += 3) {
        for (std::size_t count : {1u, 2u, 5u, 40u}) {
          std::vector<int> seen(count, -1);
          for (const Piece& p : checkpoint::pieces_of(u, first, count)) {
            ASSERT_LT(p.source + p.count, u.slice + 1);
            for (std::size_t i = 0; i < p.count; ++i) {
              ASSERT_EQ(seen[p.dest + i], -1) << "element given twice";
              seen[p.dest + i] = static_cast<int>(p.rank * u.slice + p.source + i);
            }
          }
          for (std::size_t i = 0; i < count; ++i) {
            const std::size_t e = first + i;
            EXPECT_EQ(seen[i], e < numel ? static_cast<int>(e) : -1) << "numel " << numel << " N " << n << " element " << e;
          }
        }
      }
    }
  }
}

// ---- the files ----

TEST(ShardFile, BlocksVerifiedAsRead) {
  const std::string dir = temp_dir("blocks");
  std::vector<unsigned char> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 7 + 3);
  checkpoint::FileRecord rec;
  {
    checkpoint::ShardWriter w(dir + "/f.bin", 64);
    w.append(data.data(), 100);  // appends that straddle blocks
    w.append(data.data() + 100, 900);
    rec = w.finish();
  }
  ASSERT_EQ(rec.bytes, 1000u);
  ASSERT_EQ(rec.block_crc32.size(), 16u);
  EXPECT_FALSE(fs::exists(dir + "/f.bin.partial"));
  checkpoint::ShardReader r(dir + "/f.bin", rec, 64);
  std::vector<unsigned char> got(300);
  r.read(130, 300, got.data());
  EXPECT_EQ(std::memcmp(got.data(), data.data() + 130, 300), 0);
  EXPECT_EQ(r.bytes_read(), 5u * 64);  // bytes 130-429 lie in blocks 2-6: those five are read, no more
}

// ---- same world size: bit for bit ----

struct SameN {
  int ranks, stage;
  const char* offload;
};

class SameNResume : public ::testing::TestWithParam<SameN> {};

// 6 steps straight, and 3 + save + resume + 3, give the same weights and the same losses.
TEST_P(SameNResume, BitIdentical) {
  const SameN p = GetParam();
  const std::string dir = temp_dir(cat("same_", p.ranks, "_", p.stage, "_", p.offload));
  const std::string data = text_file(dir);
  TrainSetup s;
  s.ranks = p.ranks;
  s.stage = p.stage;
  s.offload = p.offload;
  const auto [straight, resumed] = straight_and_resumed(s, data, dir, false);
  EXPECT_EQ(resumed.steps_run, 3);
  EXPECT_EQ(resumed.result.weights_sha256, straight.result.weights_sha256);
  ASSERT_EQ(resumed.result.losses.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(resumed.result.losses[i], straight.result.losses[3 + i]) << "step " << 4 + i;
  EXPECT_EQ(resumed.result.final_val_loss, straight.result.final_val_loss);
}

INSTANTIATE_TEST_SUITE_P(Stages, SameNResume,
                         ::testing::Values(SameN{2, 0, "none"}, SameN{2, 1, "none"}, SameN{2, 2, "none"}, SameN{2, 3, "none"},
                                           SameN{3, 3, "none"}, SameN{2, 1, "optimizer"}, SameN{2, 2, "optimizer"},
                                           SameN{3, 3, "optimizer"}, SameN{2, 3, "optimizer+param"}, SameN{1, 1, "none"},
                                           SameN{2, 2, "nvme"}, SameN{3, 3, "nvme+param"}, SameN{2, 3, "nvme+nvme"}));

// ---- bad input: a clear error naming the file, before any training step ----

class BadCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    data_ = text_file(dir_);
    setup_.steps = 2;
    CheckpointOptions save;
    save.save_dir = dir_ + "/ck";
    run_training(setup_, data_, save);
    step_dir_ = dir_ + "/ck/step-00000002";
    setup_.steps = 4;
  }
  // Resuming fails with a message matching every part, and no step runs.
  void expect_refused(const std::vector<std::string>& parts, const std::string& resume = "", const std::string& save = "") {
    CheckpointOptions o;
    o.resume = resume.empty() ? dir_ + "/ck" : resume;
    o.save_dir = save;
    int steps = -1;
    try {
      steps = 0;
      RunOutcome out = run_training(setup_, data_, o);
      steps = out.steps_run;
      ADD_FAILURE() << "resumed without an error";
    } catch (const CheckpointError& e) {
      for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("[checkpoint] ", 0), 0u) << e.what();
    }
    EXPECT_EQ(steps, 0);
  }
  std::string rank_file(int r) const { return step_dir_ + "/rank-0000" + std::to_string(r) + "-of-00002.bin"; }

  TrainSetup setup_;
  std::string dir_, data_, step_dir_;
};

TEST_F(BadCheckpoint, FlippedByte) {
  std::fstream f(rank_file(1), std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(5000);
  char c;
  f.read(&c, 1);
  c ^= 0x10;
  f.seekp(5000);
  f.write(&c, 1);
  f.close();
  expect_refused({rank_file(1), "is corrupt", "bytes 0-"});
}

TEST_F(BadCheckpoint, Truncated) {
  fs::resize_file(rank_file(0), fs::file_size(rank_file(0)) - 3);
  expect_refused({rank_file(0), "truncated"});
}

TEST_F(BadCheckpoint, MissingRankFile) {
  fs::remove(rank_file(1));
  expect_refused({rank_file(1), "lacks this rank file"});
}

TEST_F(BadCheckpoint, AnotherModelShape) {
  setup_.n_embd = 32;
  expect_refused({step_dir_ + "/manifest.json", "holds a GPT V=256 T=16 C=16 L=2 H=2 but this run builds a GPT V=256 T=16 C=32 L=2 H=2: set the model section to the checkpoint's model"});
}

TEST_F(BadCheckpoint, AnotherFormatVersion) {
  std::ifstream in(step_dir_ + "/manifest.json");
  nlohmann::json j = nlohmann::json::parse(in);
  in.close();
  j["version"] = 2;
  std::ofstream(step_dir_ + "/manifest.json") << j.dump();
  expect_refused({step_dir_ + "/manifest.json", "is format version 2; this zero reads version 1"});
}

// A manifest damaged or edited anywhere its numbers feed arithmetic, names or types: a
// CheckpointError naming the file and what is wrong, never a library exception, a division by
// zero, an overflowed offset or a read outside the checkpoint (resume, inspect, export, eval and
// generate all read through read_manifest).
TEST_F(BadCheckpoint, DamagedManifestFieldsAreNamedNeverAnInternalError) {
  const std::string path = step_dir_ + "/manifest.json";
  std::ifstream in(path);
  const nlohmann::json good = nlohmann::json::parse(in);
  in.close();
  const std::vector<std::pair<std::string, nlohmann::json>> edits = {
      {"/units/0/slice", 0},          {"/units/0/numel", -1},        {"/units/0/padded", 1e300},
      {"/units/1/shard_offset", 3},   {"/world_size", 1e300},        {"/world_size", 3},
      {"/step", -5},                  {"/version", 1.5},             {"/files/0/name", "../../../etc/passwd"},
      {"/files/0/bytes", 12},         {"/files/0/block_crc32", nlohmann::json::array()},
      {"/parameters/0/shape/0", 1000000000000LL},                    {"/parameters/0/unit", 99},
      {"/parameters/0/name", 5},      {"/parameters/0/unit_offset", -1}, {"/parameters", "x"},
      {"/info", "x"},                 {"/skipped_steps", "3"},       {"/checksum/block_bytes", 0},
      {"/loss_scaler", {{"scale", -1.0}, {"hysteresis_left", 2}, {"iter", 0}, {"last_overflow_iter", -1}}},
      {"/loss_scaler", {{"scale", 1.0}, {"hysteresis_left", 1e300}, {"iter", 0}, {"last_overflow_iter", -1}}},
      {"/info/stage", "3"},           {"/info/loss", "low"},         {"/info/data/path", 7},
      {"/info/validation/micro_batch", 0},                           {"/info/validation/windows", -3},
      {"/info/data", "x"},            {"/info/validation", 5}};
  for (const auto& [pointer, value] : edits) {
    nlohmann::json j = good;
    j[nlohmann::json::json_pointer(pointer)] = value;
    std::ofstream(path) << j.dump();
    try {
      checkpoint::read_manifest(path);
      ADD_FAILURE() << pointer << " = " << value.dump() << " was read without an error";
    } catch (const CheckpointError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[checkpoint] " + path, 0), 0u) << pointer << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << pointer << " = " << value.dump() << ": not a CheckpointError: " << e.what();
    }
  }
  std::ofstream(path) << good.dump();
  EXPECT_NO_THROW(checkpoint::read_manifest(path));  // the untouched manifest reads
}

// The model a manifest describes: exact positive integers that make a valid GPT, or an error.
TEST(CheckpointModel, DamagedShapesAreCheckpointErrors) {
  const nlohmann::json good = model_json(GptShape{256, 16, 32, 2, 4});
  EXPECT_EQ(model_from_json(good, "m").describe(), (GptShape{256, 16, 32, 2, 4}).describe());
  const std::vector<std::pair<std::string, nlohmann::json>> edits = {
      {"n_embd", 1e300}, {"n_embd", 0}, {"n_head", 3}, {"n_layer", -2}, {"vocab_size", 70000}, {"n_ctx", "16"}, {"type", "llama"}};
  for (const auto& [key, value] : edits) {
    nlohmann::json j = good;
    j[key] = value;
    EXPECT_THROW(model_from_json(j, "m"), CheckpointError) << key << " = " << value.dump();
  }
  EXPECT_THROW(model_from_json(nlohmann::json("gpt"), "m"), CheckpointError);
}

// A manifest without a model type (older zero) holds a GPT; a LLaMA's every LlamaConfig field
// reads back as written, and a damaged one is a CheckpointError.
TEST(CheckpointModel, UntypedIsGptAndLlamaRoundTrips) {
  nlohmann::json untyped = model_json(GptShape{256, 16, 32, 2, 4});
  untyped.erase("type");
  const ModelSection gpt = model_section_from_json(untyped, "m");
  EXPECT_FALSE(gpt.is_llama());
  EXPECT_EQ(model_json(gpt), model_json(GptShape{256, 16, 32, 2, 4}));
  for (const bool tied : {false, true}) {
    ModelSection want;
    want.type = "llama";
    want.llama = LlamaShape{300, 24, 48, 100, 3, 6, 2, 1e-6f, 50000.0, tied};
    const ModelSection got = model_section_from_json(model_json(want), "m");
    EXPECT_TRUE(got.is_llama());
    EXPECT_EQ(model_json(got), model_json(want));
    EXPECT_EQ(got.describe(), want.describe());
    EXPECT_EQ(got.llama.rms_norm_eps, 1e-6f);
    EXPECT_EQ(got.llama.tie_word_embeddings, tied);
    EXPECT_THROW(model_from_json(model_json(want), "m"), CheckpointError);  // not a GPT
  }
  ModelSection llama;
  llama.type = "llama";
  const nlohmann::json good = model_json(llama);
  const std::vector<std::pair<std::string, nlohmann::json>> edits = {
      {"num_key_value_heads", 3}, {"hidden_size", 0}, {"intermediate_size", "64"}, {"rope_theta", "big"},
      {"tie_word_embeddings", 1}, {"type", "mamba"}, {"max_position_embeddings", 1e300}};
  for (const auto& [key, value] : edits) {
    nlohmann::json j = good;
    j[key] = value;
    EXPECT_THROW(model_section_from_json(j, "m"), CheckpointError) << key << " = " << value.dump();
  }
  nlohmann::json missing = good;
  missing.erase("rope_theta");
  EXPECT_THROW(model_section_from_json(missing, "m"), CheckpointError);
}

TEST_F(BadCheckpoint, NoCheckpointInDirectory) {
  fs::create_directories(dir_ + "/empty");
  expect_refused({"no checkpoint in " + dir_ + "/empty"}, dir_ + "/empty");
}

TEST_F(BadCheckpoint, ResumeFromAPathThatIsNotADirectory) {
  expect_refused({dir_ + "/none does not exist: a checkpoint is a directory"}, dir_ + "/none");
  expect_refused({data_ + " is not a directory: a checkpoint is a directory"}, data_);
}

TEST_F(BadCheckpoint, LatestNamesARemovedCheckpoint) {
  fs::remove_all(step_dir_);
  expect_refused({dir_ + "/ck/latest", "names step-00000002"});
}

// --save that cannot be written fails at start-up, not at the first save.
TEST_F(BadCheckpoint, UnwritableSaveDirectory) {
  CheckpointOptions o;
  o.save_dir = data_ + "/ck";  // under a regular file
  int steps = 0;
  try {
    steps = run_training(setup_, data_, o).steps_run;
    ADD_FAILURE() << "no error";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot use --save " + data_ + "/ck"), std::string::npos) << e.what();
  }
  EXPECT_EQ(steps, 0);
}

// A fresh run does not overwrite a directory holding checkpoints.
TEST_F(BadCheckpoint, FreshRunIntoCheckpoints) {
  CheckpointOptions o;
  o.save_dir = dir_ + "/ck";
  EXPECT_THROW(run_training(setup_, data_, o), CheckpointError);
}

// Another optimizer (Lamb's moments are Adam's m and v) resumes too, and the change is printed.
TEST_F(BadCheckpoint, AnotherOptimizerIsAllowedAndPrinted) {
  setup_.optimizer = "Lamb";
  CheckpointOptions o;
  o.resume = dir_ + "/ck";
  const RunOutcome out = run_training(setup_, data_, o);
  EXPECT_EQ(out.steps_run, 2);
  ASSERT_FALSE(out.notes.empty());
  EXPECT_NE(out.notes[0].find("optimizer: \"AdamW\" in the checkpoint, \"Lamb\" now"), std::string::npos) << out.notes[0];
  EXPECT_EQ(out.notes[0].find("learning rate"), std::string::npos) << out.notes[0];
}

// Another learning rate does not change the model: the run resumes and says what differs.
TEST_F(BadCheckpoint, AnotherLearningRateIsAllowedAndPrinted) {
  setup_.lr = 1e-3;
  CheckpointOptions o;
  o.resume = dir_ + "/ck";
  const RunOutcome out = run_training(setup_, data_, o);
  EXPECT_EQ(out.steps_run, 2);
  ASSERT_FALSE(out.notes.empty());
  EXPECT_NE(out.notes[0].find("resumed from " + step_dir_ + " at step 2"), std::string::npos) << out.notes[0];
  EXPECT_NE(out.notes[0].find("learning rate: 0.004999"), std::string::npos) << out.notes[0];
  EXPECT_NE(out.notes[0].find("0.0010000000474974513 now"), std::string::npos) << out.notes[0];
}

// A disk that fills during a save (here: a file-size limit, RLIMIT_FSIZE, so writes past 20 KB
// fail as on a full disk): every rank gets an error that says the previous checkpoint is still
// good, and it is: `latest` names it and a resume from it works.
TEST_F(BadCheckpoint, DiskFullDuringSave) {
  CheckpointOptions o;
  o.resume = o.save_dir = dir_ + "/ck";
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit before{};
  getrlimit(RLIMIT_FSIZE, &before);
  rlimit small = before;
  small.rlim_cur = 20000;
  setrlimit(RLIMIT_FSIZE, &small);
  std::string message;
  try {
    run_training(setup_, data_, o);
  } catch (const CheckpointError& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, SIG_DFL);
  EXPECT_NE(message.find("could not write"), std::string::npos) << message;
  EXPECT_NE(message.find("The previous checkpoint, if any, is still good and `latest` names it"), std::string::npos) << message;
  std::ifstream latest(dir_ + "/ck/latest");
  std::string name;
  latest >> name;
  EXPECT_EQ(name, "step-00000002");
  CheckpointOptions again;
  again.resume = dir_ + "/ck";
  EXPECT_EQ(run_training(setup_, data_, again).steps_run, 2);
}

// --keep K leaves the newest K checkpoints; --resume + --save continue in place.
TEST_F(BadCheckpoint, KeepsTheNewest) {
  CheckpointOptions o;
  o.resume = o.save_dir = dir_ + "/ck";
  o.save_every = 1;
  o.keep = 2;
  setup_.steps = 5;
  EXPECT_EQ(run_training(setup_, data_, o).steps_run, 3);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_ + "/ck")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"latest", "lock", "step-00000004", "step-00000005"}));
}

// ---- another world size or stage: exact ----

struct Reshape {
  int from_ranks, from_stage;
  const char* from_offload;
  int to_ranks, to_stage;
  const char* to_offload;
  Dtype dtype = Dtype::kF32;  // of both runs: mixed precision saves and loads the f32 masters
};

class Resharding : public ::testing::TestWithParam<Reshape> {};

// Trained at one world size and stage, saved, loaded at another and saved again there: every
// master, first and second moment is bit-identical in the two checkpoints, the loaded engine's
// parameters are the saved masters, and each rank read at most its own share of the old files
// (plus the CRC blocks around each range), never the whole checkpoint.
TEST_P(Resharding, LoadsExactlyReadingOnlyOverlaps) {
  const Reshape p = GetParam();
  const std::string dir = temp_dir(cat("reshard_", p.from_ranks, p.from_stage, p.from_offload, "_", p.to_ranks, p.to_stage, p.to_offload, "_", dtype_label(p.dtype)));
  constexpr std::uint64_t kBlock = 256;
  std::vector<float> trained;
  {
    ThreadWorld world(p.from_ranks);
    world.run([&](int r) {
      auto comm = world.communicator(r);
      Rig rig(p.from_stage, p.from_offload, *comm, p.dtype);
      rig.train(3, *comm);
      checkpoint::Saver saver({dir + "/a", 0, "", kBlock}, *comm);
      saver.save(*rig.engine, 3, {{"note", "test"}});
      ASSERT_TRUE(saver.poll(true).has_value());
      std::vector<float> w = rig.engine->full_parameters();
      if (r == 0) trained = w;
    });
  }
  const std::string a = dir + "/a/step-00000003", b = dir + "/b/step-00000003";
  const checkpoint::Manifest m = checkpoint::read_manifest(a + "/manifest.json");
  std::uint64_t total = 0;
  for (const auto& f : m.files) total += f.bytes;
  std::vector<std::uint64_t> read(p.to_ranks);
  std::vector<std::vector<float>> loaded(p.to_ranks);
  ThreadWorld world(p.to_ranks);
  world.run([&](int r) {
    auto comm = world.communicator(r);
    Rig rig(p.to_stage, p.to_offload, *comm, p.dtype);
    read[r] = checkpoint::load_checkpoint(*rig.engine, a, m, *comm).bytes_read;
    checkpoint::Saver saver({dir + "/b", 0, "", kBlock}, *comm);
    saver.save(*rig.engine, 3, {});  // before full_parameters, which applies a pending delayed update
    saver.poll(true);
    loaded[r] = rig.engine->full_parameters();
    // The held elements of every unit, each tensor, and at most two partial blocks per
    // piece: the ranges this rank needed, and nothing else.
    std::uint64_t bound = 0;
    for (int u = 0; u < rig.engine->layout().num_units(); ++u) {
      const Engine::HeldRange h = rig.engine->held_state(u);
      bound += m.tensors.size() * (4 * h.count + 2 * kBlock * checkpoint::pieces_of(m.units[u], h.first, h.count).size());
    }
    EXPECT_LE(read[r], bound) << "rank " << r;
  });
  for (int r = 0; r < p.to_ranks; ++r) {
    EXPECT_TRUE(same_bits(loaded[r], trained)) << "rank " << r << " parameters differ from the saved run's";
    if (p.to_stage > 0 && p.to_ranks > 1) { EXPECT_LT(read[r], total) << "rank " << r << " read the whole checkpoint"; }
  }
  for (int u = 0; u < static_cast<int>(m.units.size()); ++u) {
    for (int t = 0; t < static_cast<int>(m.tensors.size()); ++t) {
      EXPECT_TRUE(same_bits(consolidated(a, u, t), consolidated(b, u, t))) << "unit " << u << " tensor " << m.tensors[t];
    }
  }
  // The test sees the moments: after 3 steps they are not zero.
  const std::vector<float> v = consolidated(a, 1, 2);
  EXPECT_GT(*std::max_element(v.begin(), v.end()), 0.0f);
}

INSTANTIATE_TEST_SUITE_P(WorldsAndStages, Resharding,
                         ::testing::Values(Reshape{4, 3, "none", 2, 1, "none"}, Reshape{2, 2, "none", 3, 2, "none"},
                                           Reshape{2, 1, "optimizer", 3, 3, "optimizer+param"},
                                           Reshape{4, 3, "optimizer+param", 2, 1, "optimizer"}, Reshape{3, 0, "none", 4, 3, "none"},
                                           Reshape{2, 3, "none", 1, 0, "none"}, Reshape{1, 0, "none", 3, 1, "none"},
                                           Reshape{4, 3, "none", 2, 1, "none", Dtype::kBf16},
                                           Reshape{2, 1, "optimizer", 3, 3, "optimizer+param", Dtype::kF16},
                                           Reshape{3, 3, "optimizer+param", 2, 2, "none", Dtype::kBf16},
                                           // offload_param alone: parameters in the host tier, the optimizer's state on the device.
                                           Reshape{4, 3, "param", 2, 1, "none"}, Reshape{2, 3, "none", 3, 3, "param", Dtype::kBf16},
                                           // The delayed update in flight: its parameters in use reshard too.
                                           Reshape{2, 2, "optimizer+dpu", 3, 1, "optimizer+dpu"},
                                           Reshape{3, 3, "optimizer+dpu", 2, 2, "optimizer+dpu", Dtype::kBf16},
                                           // The NVMe tier, saved from and loaded into: its state read and written a part at a time.
                                           Reshape{2, 1, "nvme", 3, 3, "optimizer+param"}, Reshape{3, 3, "optimizer", 2, 2, "nvme", Dtype::kBf16},
                                           Reshape{2, 2, "nvme", 3, 3, "nvme+param"},
                                           // The parameter slices on disk too, saved from and loaded into.
                                           Reshape{3, 3, "nvme+nvme", 2, 2, "nvme", Dtype::kBf16}, Reshape{2, 1, "none", 3, 3, "nvme+nvme"},
                                           Reshape{3, 3, "optimizer+nvme", 2, 3, "optimizer+param", Dtype::kBf16}),
                         [](const ::testing::TestParamInfo<Reshape>& i) {
                           const Reshape& p = i.param;
                           auto off = [](const std::string& o) { return o == "none" ? "" : o == "nvme" ? "_nvme" : o == "nvme+param" ? "_nvme_param" : o == "nvme+nvme" ? "_nvme_param_nvme" : o == "optimizer+nvme" ? "_offload_param_nvme" : o == "optimizer" ? "_offload" : o == "optimizer+dpu" ? "_offload_delayed" : o == "param" ? "_offload_param_alone" : "_offload_param"; };
                           return cat("N", p.from_ranks, "_stage", p.from_stage, off(p.from_offload), "_to_N", p.to_ranks, "_stage",
                                      p.to_stage, off(p.to_offload), p.dtype == Dtype::kF32 ? "" : cat("_", dtype_label(p.dtype)));
                         });

}  // namespace
}  // namespace zero
