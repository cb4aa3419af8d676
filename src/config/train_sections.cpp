// Ours: the training loop's sections. "train_checkpoints": zero train's sharded checkpoints
// (the --save, --save-every, --keep and --resume flags override it); "train_eval": how often
// and how much the validation split is evaluated (--eval-every, --eval-batches override it). DeepSpeed's own
// "checkpoint" section (tag_validation, load_universal, use_node_local_storage, parallel_write,
// writer) configures how its engine tags and writes checkpoints; zero accepts and ignores it, so
// these keys live apart and mean one thing whichever tool reads the file.
#include "common/error.h"
#include "config/reader.h"

namespace zero::config_detail {

std::vector<KeyRule> train_checkpoints_rules() {
  const Use R = Use::read;
  return {{"save", R, JsonType::string, ""},
          {"save_every", R, JsonType::integer, ""},
          {"keep", R, JsonType::integer, ""},
          {"resume", R, JsonType::string, ""}};
}

CheckpointSection read_train_checkpoints(const Section& top) {
  CheckpointSection c;
  if (!top.has("train_checkpoints")) return c;
  const Section s = top.child("train_checkpoints", train_checkpoints_rules());
  c.save = s.get_string("save", "");
  c.save_every = s.get_int("save_every", 0, 0, std::int64_t{1} << 40);
  c.keep = static_cast<int>(s.get_int("keep", 0, 0, 1 << 20));
  c.resume = s.get_string("resume", "");
  if (s.has("save") && c.save.empty()) s.fail("save", "is \"\"; give the directory to save into, or remove the key");
  if (s.has("resume") && c.resume.empty()) s.fail("resume", "is \"\"; give a save directory or a step-N directory, or remove the key");
  return c;
}

std::vector<KeyRule> train_eval_rules() {
  return {{"every", Use::read, JsonType::integer, ""}, {"batches", Use::read, JsonType::integer, ""}};
}

EvalSection read_train_eval(const Section& top) {
  EvalSection e;
  if (!top.has("train_eval")) return e;
  const Section s = top.child("train_eval", train_eval_rules());
  e.every = s.get_int("every", 0, 0, std::int64_t{1} << 40);
  e.batches = s.get_int("batches", 0, 1, 1 << 20);
  return e;
}

}  // namespace zero::config_detail
