// Training a GPT on text with the engine: the loop `zero train` and `zero demo` share.
//
// Every rank calls train() with the same options; rank 0 gets the per-rank figures gathered.
// A step is gradient_accumulation_steps micro-batches of this rank's slice of the global batch,
// then the optimizer step with the scheduled learning rate.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "common/trace.h"
#include "config/config.h"
#include "memory/ledger.h"
#include "model/decoder.h"
#include "train/checkpointing.h"

namespace zero {

// What one rank measured, as plain data (gathered to rank 0 as bytes).
struct RankFigures {
  std::uint64_t current[kNumTiers][kNumCategories];
  std::uint64_t peak[kNumTiers][kNumCategories];
  std::uint64_t total_current[kNumTiers];
  std::uint64_t total_peak[kNumTiers];
  std::uint64_t sent[kNumCollectives];      // in the last optimizer step
  std::uint64_t received[kNumCollectives];  // in the last optimizer step
  std::uint64_t sent_across[kNumCollectives];  // of sent, to peers on other nodes
  float loss;                               // this rank's mean loss over its micro-batches
  std::uint64_t batch_digest;               // data::batch_digest of the sequences this rank read this step
  std::uint64_t disk_read, disk_written;    // this rank's swap files on the NVMe tier this step (Engine::last_step_disk_*)
};

struct StepMetrics {
  std::int64_t step = 0;       // 1-based
  float loss = 0.0f;           // mean over ranks and micro-batches
  float lr = 0.0f;
  double grad_norm = -1.0;     // global, before clipping; -1 on a skipped step
  float loss_scale = 1.0f;     // fp16: the scale this step's loss was multiplied by
  bool skipped = false;        // fp16: a gradient overflowed, no update
  std::int64_t skipped_steps = 0;  // so far
  double step_seconds = 0.0;   // max over ranks
  double tokens_per_second = 0.0;
  float val_loss = -1.0f;      // the validation loss after this step, where --eval-every ran it; -1 elsewhere
  std::uint64_t batch_digest = 0;  // data::batch_digest of the step's whole global batch (the ranks' sum)
  std::vector<RankFigures> ranks;  // (world size) on rank 0; empty elsewhere
};

struct TrainOptions {
  TrainConfig config;
  std::string data_path;       // resolved: the file to train on
  int sample_chars = 0;        // after training, generate this many bytes of text (0: none)
  bool sample_requested = false;  // --sample given: with a .bin file (token ids, no text) an error, not skipped
  int val_windows = 64;        // validation sequences per evaluation, at most (<= 0: all the split holds)
  std::int64_t eval_every = 0; // also evaluate after every N steps (0: at the start and the end only)
  std::function<void(const StepMetrics&)> on_step;  // rank 0 only
  // This rank's ledger, which its communicator also accounts its scratch in (its peaks are reset
  // at the start). Null: a ledger of the run's own.
  Ledger* ledger = nullptr;
  bool trace = false;  // record the timeline (compute, communication, copies, CPU optimizer)
  CheckpointOptions checkpoints;                        // --save, --save-every, --keep, --resume
  // Read by every rank before the first step and at the end of each: the number of a signal
  // that asked the run to stop (0: none). When any rank's is non-zero, every rank stops there,
  // after a step saving the checkpoint a final step would (with --save). Null: never asked.
  std::function<int()> stop_requested;
  std::function<void(const std::string&)> on_note;     // rank 0 only: checkpoint messages
  // Flags that replaced a value the config file gave ("--eval-every 5 overrides train_eval.every
  // = 10"), for the CLI to print once.
  std::vector<std::string> config_overrides;
};

struct TrainResult {
  std::vector<float> losses;           // per step, mean over ranks
  std::int64_t skipped_steps = 0;      // fp16: steps skipped on gradient overflow
  float final_loss_scale = 1.0f;
  std::int64_t first_step = 0;         // steps already taken before this run (--resume)
  std::int64_t last_step = 0;          // the step the run ended after (train_steps unless stopped)
  int stopped_by_signal = 0;           // the signal that stopped it early (stop_requested); 0: ran to the end
  float first_val_loss = -1, final_val_loss = -1;  // -1: no validation split
  std::string sample;                  // generated text (printable)
  std::vector<RankFigures> final_ranks;  // rank 0 only: every rank's figures after the last step
  std::string weights_sha256;          // of the final whole weights (fp32, layout order)
  std::size_t num_parameters = 0, padded_parameters = 0, largest_unit = 0;
  int ranks_per_node = 1;              // rank 0's node's ranks (the topology the traffic is split by)
  int shard_group = 1;                 // ranks sharing one copy of the state (hybrid sharding: mics_shard_size)
  double mean_step_seconds = 0.0;      // over the steps after the first
  std::string data_source;             // the data's description: its file, or its pattern and how many files it matched
  double mean_batch_read_seconds = 0;  // this rank's time a step reading its batches from the data (every step)
  double tokens_per_second = 0.0;
  std::vector<TraceEvent> trace;       // every rank's spans, when traced
  // --init-from: the tensor bytes each rank read from the directory (empty: not read), the
  // bytes of all the model's tensors there, and the load's time on this rank.
  std::vector<std::uint64_t> init_from_bytes;
  std::uint64_t init_from_weight_bytes = 0;
  double init_from_seconds = 0;
};

class Engine;
class LanguageModel;
namespace data {
class ValidationWindows;
}
// The mean loss over the windows, spread over the ranks a micro-batch at a time (a collective:
// every rank runs the same number of forward passes). zero eval runs it on one rank.
float validation_loss(const data::ValidationWindows& windows, LanguageModel& model, Engine& engine, Communicator& comm);

// Trains as the options say. Before allocating anything, a run the planner says will not fit
// the configured device memory is refused with the planner's table (OutOfMemoryError).
TrainResult train(const TrainOptions& options, Communicator& comm);

// The KV-cached decoder (model/decoder.h) of `model`, the GPT's or the LLaMA's, over its whole
// weights in layout order (Engine::full_parameters, checkpoint::ParameterReader::read_all).
std::unique_ptr<Decoder> make_decoder(const ModelSection& model, std::vector<float> weights);

// What train() refuses before its first step, checked without a communicator for a world of
// `world_size` ranks on `backend` (threads or mpi): the data file (loaded, and split into
// training and validation), the memory sizes, and whether the planner says the run fits. Throws
// what train() would throw. The CLI calls it once, before it starts the ranks.
void check_train_options(const TrainOptions& options, int world_size, const std::string& backend);

}  // namespace zero
