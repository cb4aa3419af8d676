#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <cmath>
#include <cstdlib>
#include <span>

#include "backends/registry.h"
#include "checkpoint/hf_weights.h"
#include "common/error.h"
#include "common/host_memory.h"
#include "common/sha256.h"
#include "data/batches.h"
#include "data/load.h"
#include "data/tokenizer.h"
#include "engine/engine.h"
#include "io/swap_folder.h"
#include "model/gpt.h"
#include "model/gpt_decoder.h"
#include "model/llama_decoder.h"
#include "model/llama.h"
#include "partition/init.h"
#include "planner/byte_size.h"
#include "planner/host_fit.h"
#include "planner/model_shapes.h"
#include "planner/report.h"
#include "common/trace.h"

namespace zero {
namespace {

using Clock = std::chrono::steady_clock;

// The tokens of `path` (the data file, or the validation file): a .bin as it is, text through the
// configured tokenizer (bytes by default, read in place from the file's mapping).
data::TokenData load_data(const TrainOptions& o, const std::string& path, const data::Tokenizer& tokenizer) {
  const char* formats[] = {"auto", "text", "bin"};
  const bool by_bytes = o.config.data.tokenizer.empty() || o.config.data.tokenizer == "bytes";
  data::TokenData d = by_bytes ? data::load_tokens(path, formats[static_cast<int>(o.config.data.format)])
                               : data::tokenize_file(path, tokenizer);
  const int V = o.config.model.vocab_size();
  if (!by_bytes && d.vocab_size > V) {
    throw ConfigError(cat("[train] the tokenizer ", tokenizer.describe(), " has ", d.vocab_size,
                          " tokens but the model's vocab_size is ", V, ": set model.vocab_size to at least ", d.vocab_size));
  }
  if (d.vocab_size > V) {
    const int largest = d.tokens.max_token();
    throw ConfigError(cat("[train] ", path, " is read with a vocabulary of ", d.vocab_size,
                          " tokens (the size its header gives, or GPT-2's 50257 when it gives none; its largest token is ",
                          largest, ") but the model's vocab_size is ", V, ": set model.vocab_size to at least ", d.vocab_size));
  }
  if (o.sample_requested && o.sample_chars > 0 && d.format != "text") {
    throw ConfigError(cat("[train] --sample generates text, but ", path,
                          " holds llm.c token ids, which zero has no tokenizer to show as text: leave --sample out, or give --sample 0"));
  }
  return d;
}

// The run's data: the data file, and the validation file if data.val_path names one.
struct RunData {
  data::TokenData train;
  std::optional<data::TokenData> validation;
};

RunData load_run_data(const TrainOptions& o, const data::Tokenizer& tokenizer) {
  RunData d{load_data(o, o.data_path, tokenizer), std::nullopt};
  if (!o.config.data.val_path.empty()) d.validation = load_data(o, o.config.data.val_path, tokenizer);
  return d;
}

// Training and validation tokens: data.val_fraction held out of the data file, or all of it to
// train on and the validation file to validate on. Each must hold one sequence (zero::Error).
data::TokenSplit split_run_data(const RunData& d, double val_fraction, int T) {
  if (!d.validation) return data::split_tokens(d.train, val_fraction, T);
  return {data::split_tokens(d.train, 0.0, T).train, data::split_tokens(*d.validation, 0.0, T).train};
}

// Every rank must train on the same tokens. Ranks that read different files (a path that holds
// other contents on another host, a file rewritten between the ranks' reads, /proc/self/status)
// would each train on data of their own, and the run would mean nothing without a word: so each
// rank hashes what it read, and the sizes and SHA-256s are gathered and set against rank 0's, as
// the ranks agree on the layout (check_ranks_agree) before the first collective of a step.
void check_ranks_agree_on_data(const data::TokenSpan& tokens, const std::string& path, Communicator& comm) {
  if (comm.size() == 1) return;
  struct Identity {
    std::uint64_t count;
    char sha256[64];
  };
  // The tokens as 16-bit values, read a chunk at a time through the span (a mapped file's reads
  // are checked against the file changing), so that text and .bin, mapped or in memory, hash alike.
  Sha256 hash;
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::vector<std::int32_t> wide(std::min(kChunk, tokens.size()));
  std::vector<std::uint16_t> narrow(wide.size());
  for (std::size_t at = 0; at < tokens.size(); at += kChunk) {
    const std::size_t n = std::min(kChunk, tokens.size() - at);
    tokens.read(at, n, wide.data());
    std::copy_n(wide.begin(), n, narrow.begin());
    hash.update(narrow.data(), n * sizeof(std::uint16_t));
  }
  Identity mine{tokens.size(), {}};
  const std::string hex = hash.hex();
  std::copy_n(hex.data(), sizeof mine.sha256, mine.sha256);
  std::vector<Identity> all(comm.size());
  comm.all_gather_bytes(&mine, sizeof mine, all.data());
  auto same = [&](const Identity& a) { return a.count == all[0].count && std::equal(a.sha256, a.sha256 + 64, all[0].sha256); };
  if (std::all_of(all.begin(), all.end(), same)) return;
  std::string ranks;
  for (int r = 0; r < comm.size(); ++r) {
    if (r > 0 && same(all[r])) continue;
    ranks += cat(r == 0 ? "" : "; ", "rank ", r, ": ", all[r].count, " tokens, sha256 ", std::string(all[r].sha256, 16), "...");
  }
  throw ConfigError(cat("[data] the ranks read different data from ", path, " (", ranks, "): give every rank the same file (on ",
                        "several machines the same contents at the same path), and do not change it while the run starts"));
}

RankFigures figures(const Ledger& ledger, const Traffic& traffic, float loss) {
  RankFigures f{};
  for (int t = 0; t < kNumTiers; ++t) {
    const TierUsage u = ledger.usage(static_cast<Tier>(t));
    for (int c = 0; c < kNumCategories; ++c) f.current[t][c] = u.current[c], f.peak[t][c] = u.peak[c];
    f.total_current[t] = u.total_current;
    f.total_peak[t] = u.total_peak;
  }
  for (int k = 0; k < kNumCollectives; ++k) f.sent[k] = traffic.sent[k], f.received[k] = traffic.received[k], f.sent_across[k] = traffic.sent_across[k];
  f.loss = loss;
  return f;
}

// Summed next-token loss of the first `rows` sequences of the micro-batch just evaluated, each
// position's -log p(target) computed as the model's loss computes it.
double summed_loss(const LanguageModel& gpt, const std::vector<std::int32_t>& targets, int rows) {
  const int T = gpt.seq_len();
  double sum = 0;
  for (int b = 0; b < rows; ++b)
    for (int t = 0; t < T; ++t) sum += -std::log(gpt.probs(b, t)[targets[static_cast<std::size_t>(b) * T + t]]);
  return sum;
}

// Generates text after a prompt, one token at a time, from the whole weights with the KV-cached
// decoder (one sequence; each token costs one position, not a forward of the micro-batch).
std::string generate(const ModelSection& model, std::vector<float> weights, std::span<const std::uint16_t> prompt, int chars,
                     std::uint64_t seed, const data::Tokenizer& tokenizer) {
  const std::unique_ptr<Decoder> decoder = make_decoder(model, std::move(weights));
  const float* p = nullptr;
  for (std::uint16_t t : prompt) p = decoder->feed(t);
  std::vector<std::uint16_t> out;
  for (int i = 0; i < chars; ++i) {
    const int tok = sample_token(p, decoder->vocab_size(), 1.0, 0, counter_uniform(seed, static_cast<std::uint64_t>(i)));
    out.push_back(static_cast<std::uint16_t>(tok));
    p = decoder->feed(tok);
  }
  // A token beyond the tokenizer's vocabulary (the model's may be larger) has no text: it ends the
  // sample, as in zero generate.
  const auto known = std::find_if(out.begin(), out.end(), [&](std::uint16_t t) { return t >= tokenizer.vocab_size(); });
  return data::printable_text(tokenizer.decode(std::vector<data::TokenId>(out.begin(), known)));
}

// The error for a run that diverged: `what` happened; the advice fits the learning rate in use
// (lowering a rate of 0 is no advice).
TrainingError diverged(const std::string& what, double lr) {
  const std::string advice = lr > 0 ? "Lower the learning rate (optimizer.params.lr, --lr), keep gradient_clipping on, or warm the learning rate up longer"
                                    : "The learning rate was 0 at this step, so the data or the initial weights overflow: check the data and fp16 settings (use bf16, or a dynamic fp16 loss scale)";
  return TrainingError(cat("[train] ", what, ": training diverged. ", advice));
}

void check_device(const std::string& device) { require_backend_available(device, "[train] device"); }

// bf16 runs multiply bf16 operands on the GPU (accumulating in f32). fp16 runs keep f32 products:
// the engine scales the gradients after backward, not the loss before it, so backward's small
// gradients would underflow in fp16 operands.
GptCompute gpt_compute(const TrainConfig& c) { return {c.device, c.bf16() ? Dtype::kBf16 : Dtype::kF32}; }

// The config's model: the GPT, or the LLaMA (model.type "llama").
std::unique_ptr<LanguageModel> make_model(const TrainConfig& c, Ledger& ledger) {
  if (c.model.is_llama()) return std::make_unique<Llama>(c.model.llama, c.micro_batch_size, ledger, c.model.checkpointing, gpt_compute(c));
  return std::make_unique<Gpt>(c.model.shape, c.micro_batch_size, ledger, c.model.checkpointing, gpt_compute(c));
}

// What a LLaMA run cannot do yet, refused before any rank starts: a device without LLaMA kernels
// and cpu checkpointing.
void check_model(const TrainOptions& o) {
  const TrainConfig& c = o.config;
  if (!c.model.is_llama()) return;
  require_llama_kernels(c.device, "[config] model.type llama");
  if (c.model.checkpointing.cpu) {
    throw ConfigError("[config] activation_checkpointing.cpu_checkpointing is not implemented for model.type llama yet: "
                      "set it false (model.checkpoint_activations alone works)");
  }
}

// The settings this run's engine runs with, and the start-up check plans with: the config's, and
// the norm reported every step.
EngineSettings run_settings(const TrainConfig& c) {
  EngineSettings s = c.engine;
  s.report_grad_norm = true;
  return s;
}

EngineConfig engine_config(const TrainConfig& c, Tracer* tracer) {
  EngineConfig e;
  static_cast<EngineSettings&>(e) = run_settings(c);
  e.tracer = tracer;
  e.seed = c.seed;
  e.device = c.device;
  return e;
}

// Every rank's spans, gathered to every rank (equal-sized pieces: padded to the longest).
void gather_trace(const Tracer& tracer, Communicator& comm, TrainResult& result) {
  std::vector<TraceEvent> mine = tracer.events();
  std::uint64_t n = mine.size();
  std::vector<std::uint64_t> counts(comm.size());
  comm.all_gather_bytes(&n, sizeof n, counts.data());
  const std::uint64_t most = *std::max_element(counts.begin(), counts.end());
  mine.resize(most);
  std::vector<TraceEvent> all(most * comm.size());
  if (most > 0) comm.all_gather_bytes(mine.data(), most * sizeof(TraceEvent), all.data());
  for (int r = 0; r < comm.size(); ++r)
    result.trace.insert(result.trace.end(), all.begin() + r * most, all.begin() + r * most + counts[r]);
}

// What every rank contributes at the end of a step: its step time and whether a stop signal
// reached it. Gathered in one collective, so that all ranks read the same slowest time and the
// same stop request (the lowest such rank's), whichever rank the signal reached.
struct StepEnd {
  double seconds = 0;
  std::int32_t stop_signal = 0;
  std::int32_t unused = 0;
};

StepEnd step_end(Communicator& comm, double seconds, int stop_signal) {
  const StepEnd mine{seconds, stop_signal, 0};
  std::vector<StepEnd> all(comm.size());
  comm.all_gather_bytes(&mine, sizeof mine, all.data());
  StepEnd agreed;
  for (const StepEnd& e : all) {
    agreed.seconds = std::max(agreed.seconds, e.seconds);
    if (agreed.stop_signal == 0) agreed.stop_signal = e.stop_signal;
  }
  return agreed;
}

// The planner's view of this run, for the start-up check.
PlanInput plan_input(const TrainConfig& c, int world_size, const std::string& backend) {
  PlanInput in;
  in.model = c.model.is_llama() ? describe_llama(c.model.llama) : describe_gpt(c.model.shape);
  // The models zero builds on this run's device, as the ledger counts them.
  const bool scores = find_facts(c.device).attention_scores;
  in.activation_bytes = gpt_activation_hook(scores);
  in.llama_activation_bytes = llama_model_activation_hook(scores);
  in.ranks = world_size;
  // Under MPI the nodes are known once the ranks run: planned as nodes of hpZ's H (1 without it),
  // which H divides as the engine will require (its memory and groups are the same for any such node).
  in.ranks_per_node = backend == "threads" ? world_size : std::max(1, c.engine.hpz_partition_size);
  in.micro_batch = c.micro_batch_size;
  in.checkpointing = c.model.checkpointing;
  in.gradient_accumulation_steps = c.gradient_accumulation_steps;
  in.settings = run_settings(c);
  in.comm_scratch = backend == "mpi";
  return in;
}

// The ranks of this job on this host before a communicator exists: mpirun's count for this host
// when it started this process (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, MPICH's MPI_LOCALNRANKS),
// else all of them (the launcher starts every rank here, or they are threads of this process).
int ranks_on_this_host(int world_size) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char* v = std::getenv(name);
    if (v && std::atoi(v) > 0) return std::atoi(v);
  }
  return world_size;
}

// Sets the tiers' capacities and refuses, before anything is allocated, a run the planner says
// will not fit the device: the error carries the planner's table and its recommendation.
void check_plan_fits(const TrainConfig& c, int world_size, const std::string& backend, Ledger& ledger) {
  Capacity capacity;
  if (!c.device_memory.empty()) capacity.device = parse_byte_size(c.device_memory, "device_memory");
  // host_memory is the node's, as zero estimate's --host-memory and a machine's `free` give it:
  // each rank's host tier gets its share among the ranks on this host.
  if (!c.host_memory.empty()) {
    capacity.host = parse_byte_size(c.host_memory, "host_memory") / static_cast<std::uint64_t>(ranks_on_this_host(world_size));
  }
  ledger.set_capacity(Tier::kDevice, capacity.device);
  ledger.set_capacity(Tier::kHost, capacity.host);
  if (!capacity.device) return;
  const Plan p = plan(plan_input(c, world_size, backend));
  if (p.device.total() <= *capacity.device) return;
  PlanInput in = plan_input(c, world_size, backend);
  Capacity per_node = capacity;
  if (capacity.host) per_node.host = *capacity.host * static_cast<std::uint64_t>(in.ranks_per_node);
  const EstimateReport report = make_report(in, per_node, std::nullopt);
  throw OutOfMemoryError(cat("[train] this run needs ", format_bytes_beside(p.device.total(), *capacity.device),
                             " of device memory per rank (stage ", plan_label(in.settings), ") but the device has ",
                             format_bytes_beside(*capacity.device, p.device.total()),
                             ". Nothing was allocated. The planner's table:\n", format_report(report)));
}

// Refuses, before the first allocation, a run that the host's memory cannot hold: the planner's
// figures for every rank on this host (activations included; on the cpu device the device tier is
// host memory too) and the data, against `memory`, measured before the data was loaded.
void check_host_memory(const TrainConfig& c, int world_size, const std::string& backend, int ranks_on_host,
                       const data::TokenData& tokens, const HostMemory& memory) {
  check_host_fit(plan_input(c, world_size, backend), find_facts(c.device).device_tier_is_host, ranks_on_host, tokens.mapped_bytes,
                 tokens.private_bytes, memory);
}

// --init-from's weights (model.init_from) as step 0's state, unless the run resumes: a resumed
// run's weights are its checkpoint's. Every rank's bytes read, for the summary.
void init_from_directory(const TrainOptions& o, Engine& engine, Communicator& comm, TrainResult& result) {
  const TrainConfig& c = o.config;
  if (c.model.init_from.empty()) return;
  if (!o.checkpoints.resume.empty()) {
    if (comm.rank() == 0 && o.on_note) o.on_note(cat("--init-from ", c.model.init_from, " not read: the weights are --resume's checkpoint's"));
    return;
  }
  const checkpoint::HfImportStats s = checkpoint::import_hf_weights(engine, c.model.init_from, c.model.is_llama(), comm);
  result.init_from_bytes.resize(comm.size());
  comm.all_gather_bytes(&s.bytes_read, sizeof s.bytes_read, result.init_from_bytes.data());
  result.init_from_weight_bytes = s.weight_bytes;
  result.init_from_seconds = s.seconds;
}

}  // namespace

void check_train_options(const TrainOptions& o, int world_size, const std::string& backend) {
  check_device(o.config.device);
  check_model(o);
  if (o.config.engine.offload.optimizer_nvme) io::check_nvme_path(o.config.engine.offload.nvme.path);
  if (o.config.engine.offload.params_nvme) io::check_nvme_path(o.config.engine.offload.param_nvme.path);
  const std::unique_ptr<data::Tokenizer> tokenizer = data::open_tokenizer(o.config.data.tokenizer);
  CheckpointOptions checkpoints = o.checkpoints;
  checkpoints.tokenizer = tokenizer_record(o.config.data.tokenizer, *tokenizer);
  check_checkpoint_options(checkpoints, o.config, world_size);
  if (!o.config.model.init_from.empty()) {  // every header read and matched to the model; no weight read
    const ModelSection& m = o.config.model;
    checkpoint::HfWeights(m.init_from, m.is_llama() ? m.llama.units() : m.shape.units(), m.is_llama());
  }
  const HostMemory memory = host_memory();  // before the data: a decompressed copy is part of the need
  const RunData data = load_run_data(o, *tokenizer);
  const data::TokenData& tokens = data.train;
  const data::TokenSplit split = split_run_data(data, o.config.data.val_fraction, o.config.model.seq_len());  // throws if too short
  if (o.eval_every > 0 && split.validation.empty()) {
    throw ConfigError(cat("[train] --eval-every (train_eval.every) ", o.eval_every, " evaluates the held-out split, but ",
                          "data.val_fraction is 0, so nothing is held out: set data.val_fraction (e.g. 0.05) or data.val_path "
                          "(--val-data), or leave --eval-every out"));
  }
  if (o.config.engine.mics_shard_size > 0 && (!o.checkpoints.save_dir.empty() || !o.checkpoints.resume.empty())) {
    throw ConfigError("[train] checkpoints (--save, --resume, train_checkpoints) with hybrid sharding "
                      "(zero_optimization.mics_shard_size) are not supported yet: the groups hold copies of the same shards. "
                      "Train without checkpoints, or remove mics_shard_size");
  }
  Ledger ledger;
  check_plan_fits(o.config, world_size, backend, ledger);
  check_host_memory(o.config, world_size, backend, ranks_on_this_host(world_size), tokens, memory);
}

// Mean loss over every validation window, spread over the ranks B at a time (validation_pass:
// every rank runs the same number of forward passes, padding where its share is short; stage 3
// gathers in each). The sum over ranks is taken in rank order: the same on every rank.
float validation_loss(const data::ValidationWindows& windows, LanguageModel& gpt, Engine& engine, Communicator& comm) {
  const int B = gpt.micro_batch(), T = gpt.seq_len(), n = windows.count();
  std::vector<std::int32_t> in(static_cast<std::size_t>(B) * T), tgt(in.size());
  double sum = 0;
  for (int p = 0; p < data::validation_passes(n, comm.size(), B); ++p) {
    const data::SequenceRange r = data::validation_pass(n, comm.size(), comm.rank(), B, p);
    windows.fill_padded(r.first, r.count, B, in.data(), tgt.data());
    gpt.set_batch(in.data(), tgt.data());
    engine.evaluate();
    sum += summed_loss(gpt, tgt, r.count);
  }
  std::vector<double> sums(comm.size());
  comm.all_gather_bytes(&sum, sizeof sum, sums.data());
  double total = 0;
  for (double x : sums) total += x;
  return static_cast<float>(total / (static_cast<double>(n) * T));
}

TrainResult train(const TrainOptions& o, Communicator& comm) {
  const TrainConfig& c = o.config;
  CheckpointOptions checkpoint_options = o.checkpoints;
  checkpoint_options.data_path = o.data_path;
  const std::unique_ptr<data::Tokenizer> tokenizer = data::open_tokenizer(c.data.tokenizer);
  checkpoint_options.tokenizer = tokenizer_record(c.data.tokenizer, *tokenizer);
  TrainCheckpoints checkpoints(checkpoint_options, c, comm, comm.rank() == 0 ? o.on_note : nullptr);  // --save, --resume: checked first
  // Every rank measures the host's memory before any rank allocates (the gather waits for all), so
  // that no rank sees another's allocations as the memory it lacks.
  const HostMemory memory = host_memory();
  std::vector<std::uint64_t> measured(comm.size());
  comm.all_gather_bytes(&memory.available, sizeof memory.available, measured.data());
  HostMemory agreed = memory;  // the least any rank saw: every rank reaches the same verdict
  agreed.available = *std::min_element(measured.begin(), measured.end());
  const RunData data = load_run_data(o, *tokenizer);
  const data::TokenData& tokens = data.train;
  check_ranks_agree_on_data(tokens.tokens, o.data_path, comm);
  if (data.validation) check_ranks_agree_on_data(data.validation->tokens, c.data.val_path, comm);
  const int T = c.model.seq_len(), B = c.micro_batch_size, A = c.gradient_accumulation_steps;
  const data::TokenSplit split = split_run_data(data, c.data.val_fraction, T);
  const data::TokenBatches batches(split.train, T, c.data.seed);

  Ledger own_ledger;
  Ledger& ledger = o.ledger ? *o.ledger : own_ledger;
  ledger.reset_peaks();
  check_plan_fits(c, comm.size(), comm.backend(), ledger);
  check_host_memory(c, comm.size(), comm.backend(), comm.local_size(), tokens, agreed);
  std::unique_ptr<Tracer> tracer = o.trace ? std::make_unique<Tracer>(comm.rank()) : nullptr;
  comm.set_tracer(tracer.get());
  struct Untrace {  // the tracer dies with this run; the communicator lives on
    Communicator& comm;
    ~Untrace() { comm.set_tracer(nullptr); }
  } untrace{comm};
  check_device(c.device);
  check_model(o);
  const std::unique_ptr<LanguageModel> model = make_model(c, ledger);
  LanguageModel& gpt = *model;
  Engine engine(engine_config(c, tracer.get()), gpt, comm, ledger);

  std::unique_ptr<data::ValidationWindows> windows;
  if (!split.validation.empty()) windows = std::make_unique<data::ValidationWindows>(split.validation, T, o.val_windows);
  checkpoints.set_validation_windows(windows ? windows->count() : 0);

  const auto train_tokens = static_cast<std::int64_t>(split.train.size());
  const std::int64_t first_step = checkpoints.resume(engine, train_tokens);
  check_steps_after_resume(first_step, c.train_steps);
  TrainResult result;
  init_from_directory(o, engine, comm, result);
  result.first_step = first_step;
  result.num_parameters = engine.layout().numel();
  result.padded_parameters = engine.layout().padded_numel();
  result.ranks_per_node = comm.local_size();
  result.shard_group = engine.layout().shard_size();
  result.largest_unit = engine.layout().largest_unit();
  if (windows) result.first_val_loss = validation_loss(*windows, gpt, engine, comm);
  // A stop requested during the start-up (which takes minutes for many ranks) ends the run before
  // its first step: it has nothing new to save.
  const int stopped_early = step_end(comm, 0, o.stop_requested ? o.stop_requested() : 0).stop_signal;
  result.last_step = first_step;
  result.stopped_by_signal = stopped_early;

  std::vector<std::int32_t> in(static_cast<std::size_t>(B) * T), tgt(in.size());
  const double tokens_per_step = static_cast<double>(c.train_batch_size) * T;
  double timed = 0, first_seconds = 0, reading = 0;  // reading: this rank's time filling batches from the data
  for (std::int64_t step = first_step; step < c.train_steps && !stopped_early; ++step) {
    const auto t0 = Clock::now();
    double loss_sum = 0;
    std::uint64_t digest = 0;  // of the sequences this rank reads this step
    // Before the backward (offload may start Adam there). As DeepSpeed, the schedule advances only
    // on applied steps: an fp16 step skipped on overflow does not count.
    engine.set_learning_rate(c.scheduler.lr_at(engine.steps_done() - engine.skipped_steps(), c.engine.adam.lr));
    for (int m = 0; m < A; ++m) {
      const data::SequenceRange r = data::micro_batch_slice(c.train_batch_size, comm.size(), comm.rank(), A, m);
      const auto read_from = Clock::now();
      batches.fill(step, r.first, r.count, in.data(), tgt.data());
      reading += std::chrono::duration<double>(Clock::now() - read_from).count();
      digest += data::batch_digest(r.first, r.count, T, in.data(), tgt.data());
      gpt.set_batch(in.data(), tgt.data());
      loss_sum += engine.forward_backward(m + 1 == A);
    }
    const StepReport report = engine.step();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

    StepMetrics m;
    m.step = step + 1;
    m.lr = report.lr;
    m.grad_norm = report.grad_norm;
    m.loss_scale = report.loss_scale;
    m.skipped = report.skipped;
    m.skipped_steps = engine.skipped_steps();
    RankFigures mine = figures(ledger, engine.last_step_traffic(), static_cast<float>(loss_sum / A));
    mine.batch_digest = digest;
    mine.disk_read = engine.last_step_disk_read(), mine.disk_written = engine.last_step_disk_written();
    m.ranks.resize(comm.size());
    comm.all_gather_bytes(&mine, sizeof mine, m.ranks.data());
    const StepEnd end = step_end(comm, seconds, o.stop_requested ? o.stop_requested() : 0);
    m.step_seconds = end.seconds;
    double loss = 0;
    for (const RankFigures& f : m.ranks) loss += f.loss, m.batch_digest += f.batch_digest;
    m.loss = static_cast<float>(loss / comm.size());
    // The same on every rank (the loss is the mean over ranks, the norm the global one): every
    // rank stops here, before the step is saved. A non-finite gradient norm on an applied step
    // has put inf or nan into the weights; the loss would show it only at the next step, and
    // after the last step there is none.
    if (!std::isfinite(m.loss)) throw diverged(cat("the loss is ", m.loss, " at step ", m.step), m.lr);
    if (!m.skipped && !std::isfinite(m.grad_norm)) {
      throw diverged(cat("the gradient norm is ", m.grad_norm, " at step ", m.step, " (its update made the weights non-finite)"), m.lr);
    }
    m.tokens_per_second = tokens_per_step / m.step_seconds;
    if (step > first_step) timed += m.step_seconds;
    if (step == first_step) first_seconds = m.step_seconds;
    result.losses.push_back(m.loss);
    if (windows && o.eval_every > 0 && (step + 1) % o.eval_every == 0) {
      m.val_loss = validation_loss(*windows, gpt, engine, comm);
      if (!std::isfinite(m.val_loss)) throw diverged(cat("the validation loss is ", m.val_loss, " after step ", m.step), m.lr);
    }
    if (comm.rank() == 0) {
      result.final_ranks = m.ranks;
      if (o.on_step) o.on_step(m);
    }
    // A stop request ends the run here on every rank alike (the ranks agreed on it above), with
    // the checkpoint a final step would write: saved and published before train() returns.
    const bool stopping = end.stop_signal != 0 && step + 1 < c.train_steps;
    const bool last = step + 1 == c.train_steps || stopping;
    if (checkpoints.due(step + 1, last) && !engine.parameters_finite()) {  // never a checkpoint of diverged weights
      throw diverged(cat("the weights after step ", m.step, " are not all finite (no checkpoint of them was written)"), m.lr);
    }
    checkpoints.after_step(engine, step + 1, m.loss, train_tokens, last);
    result.last_step = step + 1;
    if (stopping) {
      result.stopped_by_signal = end.stop_signal;
      break;
    }
  }
  engine.synchronize();  // the delayed update's last step lands
  result.skipped_steps = engine.skipped_steps();
  result.final_loss_scale = engine.loss_scale();
  const auto steps_run = static_cast<std::int64_t>(result.losses.size());
  result.mean_step_seconds = steps_run > 1 ? timed / static_cast<double>(steps_run - 1) : first_seconds;
  result.mean_batch_read_seconds = steps_run > 0 ? reading / static_cast<double>(steps_run) : 0;
  result.tokens_per_second = result.mean_step_seconds > 0 ? tokens_per_step / result.mean_step_seconds : 0;
  result.data_source = tokens.source;
  // A stopped run has a grace period to live in: it skips the final evaluation and the sample.
  if (windows && !result.stopped_by_signal) {
    result.final_val_loss = validation_loss(*windows, gpt, engine, comm);
    if (!std::isfinite(result.final_val_loss)) {
      throw diverged(cat("the validation loss after the last step (", c.train_steps, ") is ", result.final_val_loss), c.engine.adam.lr);
    }
  }
  std::vector<float> weights = engine.full_parameters();  // a collective in stage 3
  if (!std::all_of(weights.begin(), weights.end(), [](float w) { return std::isfinite(w); })) {
    throw diverged(cat("the weights after the last step (", result.last_step, ") are not all finite"), c.engine.adam.lr);
  }
  result.weights_sha256 = sha256_hex(weights.data(), weights.size() * sizeof(float));
  if (o.sample_chars > 0 && tokens.format == "text" && comm.rank() == 0 && !result.stopped_by_signal) {  // byte-level text: the sample is readable
    const std::vector<std::uint16_t> prompt = (split.validation.empty() ? split.train : split.validation).first(T / 2).to_vector();
    result.sample = data::printable_text(tokenizer->decode(std::vector<data::TokenId>(prompt.begin(), prompt.end()))) +
                    generate(c.model, std::move(weights), prompt, o.sample_chars, c.seed, *tokenizer);
  }
  if (tracer) gather_trace(*tracer, comm, result);
  return result;
}

std::unique_ptr<Decoder> make_decoder(const ModelSection& model, std::vector<float> weights) {
  if (model.is_llama()) return std::make_unique<LlamaDecoder>(model.llama, std::move(weights));
  return std::make_unique<GptDecoder>(model.shape, std::move(weights));
}

}  // namespace zero
