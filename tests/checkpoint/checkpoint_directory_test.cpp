// A save directory has one owner, and its files are read through the one input reader: every
// file type a checkpoint's file can be replaced by (FIFO, directory, device, a huge file) is
// refused by name at once, `latest` never leads out of its directory, a second run cannot take
// a directory another process holds, and a run's history is never mixed with another's.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "checkpoint/directory.h"
#include "checkpoint/checkpoint_util.h"

namespace zero::testing {
namespace {

class CheckpointDirectory : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir(cat("dir_", ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    data_ = text_file(dir_);
    setup_.steps = 2;
    CheckpointOptions save;
    save.save_dir = dir_ + "/ck";
    save.save_every = 1;
    run_training(setup_, data_, save);
    step_dir_ = dir_ + "/ck/step-00000002";
    setup_.steps = 4;
  }
  // Resuming (and saving to `save`, if given) fails with a message holding every part; no step runs.
  void expect_refused(const std::vector<std::string>& parts, const std::string& resume, const std::string& save = "") {
    CheckpointOptions o;
    o.resume = resume;
    o.save_dir = save;
    int steps = 0;
    try {
      steps = run_training(setup_, data_, o).steps_run;
      ADD_FAILURE() << "resumed without an error";
    } catch (const CheckpointError& e) {
      for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
    EXPECT_EQ(steps, 0);
  }
  // Replaces `path` by a FIFO (the original kept aside and put back by the caller's restore()).
  void make_fifo(const std::string& path) {
    fs::rename(path, path + ".kept");
    ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  }
  void restore(const std::string& path) {
    fs::remove_all(path);
    fs::rename(path + ".kept", path);
  }
  std::vector<std::string> names(const std::string& dir) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  TrainSetup setup_;
  std::string dir_, data_, step_dir_;
};

TEST_F(CheckpointDirectory, FifoInPlaceOfAnyFileIsRefusedByName) {
  const std::string rank = step_dir_ + "/rank-00001-of-00002.bin";
  for (const std::string& path : {dir_ + "/ck/latest", step_dir_ + "/manifest.json", rank}) {
    make_fifo(path);
    expect_refused({path, "is a FIFO (named pipe), not a regular file"}, dir_ + "/ck");
    if (path.ends_with("latest")) {  // what --save reads at start-up, too
      CheckpointOptions fresh;
      fresh.save_dir = dir_ + "/ck";
      EXPECT_THROW(run_training(setup_, data_, fresh), CheckpointError);
    }
    restore(path);
  }
  CheckpointOptions o;
  o.resume = dir_ + "/ck";
  EXPECT_EQ(run_training(setup_, data_, o).steps_run, 2);  // restored: the checkpoint is whole
}

TEST_F(CheckpointDirectory, DeviceOrHugeManifestIsRefusedBeforeReading) {
  const std::string manifest = step_dir_ + "/manifest.json";
  fs::rename(manifest, manifest + ".kept");
  fs::create_symlink("/dev/zero", manifest);
  expect_refused({manifest, "is a character device, not a regular file"}, dir_ + "/ck");
  fs::remove(manifest);
  { std::ofstream huge(manifest); }
  fs::resize_file(manifest, checkpoint::kMaxManifestBytes + 1);  // sparse: no disk used
  expect_refused({manifest, "more than the 268435456 bytes"}, dir_ + "/ck");
  restore(manifest);
}

TEST_F(CheckpointDirectory, LatestNeverLeadsOutOfItsDirectory) {
  fs::create_directories(dir_ + "/x");
  fs::copy(step_dir_, dir_ + "/x/step-00000002");  // a checkpoint outside, which `latest` must not reach
  for (const std::string& name : {std::string("../x/step-00000002"), dir_ + "/x/step-00000002", std::string("step-2")}) {
    std::ofstream(dir_ + "/ck/latest") << name << "\n";
    expect_refused({dir_ + "/ck/latest holds '" + name + "', not the name of one of"}, dir_ + "/ck");
  }
}

TEST_F(CheckpointDirectory, RankFileThatIsADirectoryIsNotCalledTruncated) {
  const std::string rank = step_dir_ + "/rank-00000-of-00002.bin";
  fs::rename(rank, rank + ".kept");
  fs::create_directory(rank);
  expect_refused({rank, "is a directory, not a regular file"}, dir_ + "/ck");
  restore(rank);
}

// The lock: another process holding the directory is named (host and pid); in this process the
// lock is shared; the kernel releases it when the holder dies.
TEST_F(CheckpointDirectory, ASecondOwnerIsRefusedWithTheHoldersPid) {
  const std::string save = dir_ + "/owned";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const auto lock = checkpoint::lock_save_directory(save);
    const char ok = 1;
    if (::write(ready[1], &ok, 1) != 1) ::_exit(2);
    ::pause();
    ::_exit(0);
  }
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  try {
    checkpoint::lock_save_directory(save);
    ADD_FAILURE() << "took a directory another process holds";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(cat("--save ", save, " is in use by another run (zero train on host ")), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(cat(", pid ", child, ", holds ", save, "/lock)")), std::string::npos) << e.what();
  }
  CheckpointOptions o;  // a training run saving there fails at start-up, before any step
  o.save_dir = save;
  int steps = 0;
  EXPECT_THROW(steps = run_training(setup_, data_, o).steps_run, CheckpointError);
  EXPECT_EQ(steps, 0);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const auto mine = checkpoint::lock_save_directory(save);  // released with its holder
  EXPECT_EQ(checkpoint::lock_save_directory(save), mine);
  ::close(ready[0]);
  ::close(ready[1]);
}

// A lock file that is not a regular file (a FIFO would block a plain open; a symlink would lock
// another file) is refused by name.
TEST(CheckpointLock, LockFileOfAnotherTypeIsRefused) {
  const std::string dir = temp_dir("lock_types");
  const auto refused = [](const std::string& save, const std::string& what) {
    try {
      checkpoint::lock_save_directory(save);
      ADD_FAILURE() << save << " was taken";
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(save + "/lock"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fs::create_directories(dir + "/d/lock");
  refused(dir + "/d", "it is a directory");
  fs::create_directories(dir + "/f");
  ASSERT_EQ(::mkfifo((dir + "/f/lock").c_str(), 0644), 0);
  refused(dir + "/f", "is a FIFO (named pipe), not a regular file");
  fs::create_directories(dir + "/s");
  fs::create_symlink("/etc/passwd", dir + "/s/lock");
  refused(dir + "/s", "it is a symbolic link");
}

// Resuming an older step into its own directory would replace the later steps: refused, naming
// them, and nothing in the directory changes. A fork goes to a new directory.
TEST_F(CheckpointDirectory, ResumingAnOlderStepIntoItsDirectoryIsRefused) {
  const std::vector<std::string> before = names(dir_ + "/ck");
  expect_refused({"--resume " + dir_ + "/ck/step-00000001 goes back to step 1, but --save " + dir_ + "/ck holds later checkpoints (step-00000002; latest step-00000002)",
                  "pass a new --save directory"},
                 dir_ + "/ck/step-00000001", dir_ + "/ck");
  EXPECT_EQ(names(dir_ + "/ck"), before);
  CheckpointOptions fork;
  fork.resume = dir_ + "/ck/step-00000001";
  fork.save_dir = dir_ + "/fork";
  EXPECT_EQ(run_training(setup_, data_, fork).steps_run, 3);
  EXPECT_EQ(names(dir_ + "/ck"), before);
}

// --resume A --save B where B holds another run's checkpoints: refused (before the fix --keep 1
// deleted B's checkpoints without a word).
TEST_F(CheckpointDirectory, ResumingIntoAnotherRunsDirectoryIsRefused) {
  CheckpointOptions other;
  other.save_dir = dir_ + "/b";
  other.save_every = 1;
  setup_.steps = 3;
  run_training(setup_, data_, other);
  const std::vector<std::string> before = names(dir_ + "/b");
  setup_.steps = 5;
  CheckpointOptions o;
  o.resume = dir_ + "/ck/step-00000002";
  o.save_dir = dir_ + "/b";
  o.keep = 1;
  EXPECT_THROW(run_training(setup_, data_, o), CheckpointError);
  expect_refused({"--save " + dir_ + "/b already holds checkpoints of another run (latest: step-00000003)"}, o.resume, o.save_dir);
  EXPECT_EQ(names(dir_ + "/b"), before);
}

TEST(CheckpointOutput, PathsInsideACheckpointDirectoryAreRefused) {
  const std::string dir = temp_dir("outside");
  fs::create_directories(dir + "/ck/step-00000002");
  std::ofstream(dir + "/ck/latest") << "step-00000002\n";
  std::ofstream(dir + "/ck/step-00000002/manifest.json") << "{}";
  for (const std::string& out : {dir + "/ck/latest", dir + "/ck/model.safetensors", dir + "/ck/step-00000002/x", dir + "/ck/new/x"}) {
    try {
      checkpoint::check_outside_checkpoints("--out", out);
      ADD_FAILURE() << out << " was allowed";
    } catch (const CheckpointError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[output] --out " + out + " is inside the checkpoint directory " + dir + "/ck", 0), 0u) << e.what();
    }
  }
  EXPECT_NO_THROW(checkpoint::check_outside_checkpoints("--out", dir + "/model.safetensors"));
}

}  // namespace
}  // namespace zero::testing
