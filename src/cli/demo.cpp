#include "cli/demo.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/flags.h"
#include "cli/launch.h"
#include "cli/svg.h"
#include "common/error.h"
#include "common/output_file.h"
#include "data/load.h"
#include "train/trainer.h"

namespace zero::cli {
namespace {

constexpr int kDevice = static_cast<int>(Tier::kDevice);
int cat_index(Category c) { return static_cast<int>(c); }

struct StageRun {
  StageRun(int s, bool opt = false, bool param = false, bool ckpt = false)
      : stage(s), offload_optimizer(opt), offload_param(param), checkpointing(ckpt) {}
  int stage = 0;
  bool offload_optimizer = false, offload_param = false;
  bool checkpointing = false;  // the extra run with activation checkpointing, beside the same run without it
  TrainResult result;
  std::string label() const {
    return cat(stage, offload_optimizer ? "+opt" : "", offload_param ? "+param" : "", checkpointing ? "+ckpt" : "");
  }
};

// Bytes per parameter of the precision: b for a parameter and a gradient, k of optimizer state.
// fp32 Adam: 4 + 4 + 8 (m and v); mixed precision: 2 + 2 + 12 (16-bit parameters and gradients;
// f32 master, m and v: the paper's K = 12).
struct ElementSizes {
  double b = 4, k = 8;
};

ElementSizes element_sizes(const TrainConfig& c) { return c.bf16() || c.fp16() ? ElementSizes{2, 12} : ElementSizes{4, 8}; }

// One category's formula: `bytes` per parameter, over all Ψ parameters or (sharded) over Ψ/N.
struct Term {
  double bytes = 0;
  bool sharded = false;
};

// A tier's model-state formula by category, as the paper writes it.
struct StateFormula {
  Term params, grads, optim;
};

// The per-rank bytes of a formula by category.
struct Formula {
  double params, grads, optim;
  double total() const { return params + grads + optim; }
};

double term_bytes(Term t, double psi, int n) { return t.bytes * psi / (t.sharded ? n : 1); }

Formula evaluate(const StateFormula& f, double psi, int n) {
  return {term_bytes(f.params, psi, n), term_bytes(f.grads, psi, n), term_bytes(f.optim, psi, n)};
}

std::string term_text(double bytes, bool sharded) { return cat(static_cast<long long>(bytes), sharded ? "Ψ/N" : "Ψ"); }

// "4Ψ+4Ψ+8Ψ/N" (parameters + gradients + optimizer state); `combined`: like terms summed, "16Ψ/N".
std::string mark_text(const StateFormula& f, bool combined) {
  std::string s;
  const auto add = [&](double bytes, bool sharded) {
    if (bytes <= 0) return;
    if (!s.empty()) s += '+';
    s += term_text(bytes, sharded);
  };
  if (combined) {
    for (bool sharded : {false, true}) {
      double b = 0;
      for (Term t : {f.params, f.grads, f.optim}) b += t.sharded == sharded ? t.bytes : 0;
      add(b, sharded);
    }
  } else {
    for (Term t : {f.params, f.grads, f.optim}) add(t.bytes, t.sharded);
  }
  return s.empty() ? "0" : s;
}

// Device-tier model state: stage 1 shards the optimizer state, 2 also the gradients, 3 also the
// parameters. With offload the shard's master, moments and gradients go to the host and the
// device keeps only the parameters it computes with (none with offload_param).
StateFormula device_formula(const StageRun& run, ElementSizes e) {
  if (run.offload_optimizer) return {{run.offload_param ? 0.0 : e.b, run.stage == 3}, {}, {}};
  return {{e.b, run.stage == 3}, {e.b, run.stage >= 2}, {e.k, run.stage >= 1}};
}

// Host-tier model state: with offload, this rank's shard of parameters (fp32 master in fp32,
// the 16-bit copy in mixed precision), gradients and optimizer state: (b + b + k)Ψ/N.
StateFormula host_formula(const StageRun& run, ElementSizes e) {
  if (!run.offload_optimizer) return {};
  return {{e.b, true}, {e.b, true}, {e.k, true}};
}

// Bytes each rank sends per step: 2Ψ(N-1)/N elements in stages 0-2, 3Ψ(N-1)/N in stage 3, where
// the tied embedding (E parameters) is gathered once more in forward and once in backward; b
// bytes each (the collectives move the training type).
double formula_traffic(int stage, double psi, double tied, int n, ElementSizes e) {
  return (stage == 3 ? 3.0 * psi + 2.0 * tied : 2.0 * psi) * (n - 1) / n * e.b;
}

std::string traffic_mark_text(int stage, ElementSizes e) {
  return cat(stage == 3 ? "(3Ψ + 2E)" : "2Ψ", "(N−1)/N × ", static_cast<int>(e.b), " B");
}

std::uint64_t max_over_ranks(const TrainResult& r, Category c, bool peak, int tier = kDevice) {
  std::uint64_t m = 0;
  for (const RankFigures& f : r.final_ranks) m = std::max(m, (peak ? f.peak : f.current)[tier][cat_index(c)]);
  return m;
}

std::uint64_t sent_max(const TrainResult& r, bool across_nodes = false) {
  std::uint64_t m = 0;
  for (const RankFigures& f : r.final_ranks) {
    std::uint64_t s = 0;
    for (auto b : across_nodes ? f.sent_across : f.sent) s += b;
    m = std::max(m, s);
  }
  return m;
}

std::string kib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", bytes / 1024.0);
  return buf;
}

std::string pair(double measured, double formula) { return kib(measured) + "/" + kib(formula); }

// The share of a rank's bytes that go to other nodes: its collectives send every peer the same
// amount, so it is the share of its peers there, (N - L)/(N - 1) for a node of L ranks.
double across_share(const Communicator& comm) {
  return comm.size() > 1 ? static_cast<double>(comm.size() - comm.local_size()) / (comm.size() - 1) : 0.0;
}

// With several nodes (machines under MPI; --ranks-per-node for thread ranks): each run's bytes
// across nodes, measured (the rank that sent most) beside the formula's share of them.
void print_across(const std::vector<StageRun>& runs, const TrainConfig& c, const Communicator& comm, double tied) {
  if (comm.num_nodes() < 2) return;
  const double psi = static_cast<double>(runs[0].result.num_parameters), share = across_share(comm);
  std::printf("\nsent across nodes per step (%d nodes, %d of the ranks on rank 0's), KiB measured / the formula x (N-L)/(N-1):",
              comm.num_nodes(), comm.local_size());
  for (const StageRun& run : runs) {
    std::printf("%s %s %s", &run == &runs[0] ? "" : ",", run.label().c_str(),
                pair(static_cast<double>(sent_max(run.result, true)), share * formula_traffic(run.stage, psi, tied, comm.size(), element_sizes(c))).c_str());
  }
  std::printf("\n");
}

std::string precision_name(const TrainConfig& c) {
  return c.fp16() ? "fp16 mixed precision" : c.bf16() ? "bf16 mixed precision" : "fp32";
}

void print_table(const std::vector<StageRun>& runs, const TrainConfig& c, int n, const std::string& backend, double tied) {
  const double psi = static_cast<double>(runs[0].result.num_parameters);
  std::printf("\nzero demo: GPT %s (Ψ = %.0f parameters), %d ranks (%s), %lld AdamW steps, global batch %d x %d tokens\n",
              c.model.shape.describe().c_str(), psi, n, backend.c_str(), static_cast<long long>(c.train_steps),
              c.train_batch_size, c.model.shape.seq_len);
  const ElementSizes e = element_sizes(c);
  std::printf("%s; per-rank KiB, measured by the memory ledger (max over ranks) / the paper's formula (%.0f + %.0f + %.0f bytes per\n"
              "parameter); sent = bytes a rank sent in one step, measured by the communicator / 2Ψ(N-1)/N or 3Ψ(N-1)/N elements of %.0f bytes\n\n",
              precision_name(c).c_str(), e.b, e.b, e.k, e.b);
  std::printf("%-11s %15s %15s %15s %15s %9s %9s %15s %15s %8s %10s %9s  %s\n", "stage", "params", "grads", "optimizer",
              "model state", "gathered", "activ.", "host", "sent/step", "ms/step", "final loss", "val loss", "weights sha256");
  for (const StageRun& run : runs) {
    const TrainResult& r = run.result;
    const Formula f = evaluate(device_formula(run, e), psi, n);
    const double p = max_over_ranks(r, Category::kParameters, false), g = max_over_ranks(r, Category::kGradients, false),
                 o = max_over_ranks(r, Category::kOptimizerState, false);
    std::uint64_t state = 0;
    for (const RankFigures& rf : r.final_ranks) {
      state = std::max(state, rf.current[kDevice][0] + rf.current[kDevice][1] + rf.current[kDevice][2]);
    }
    std::uint64_t host = 0;
    for (const RankFigures& rf : r.final_ranks) host = std::max(host, rf.total_current[static_cast<int>(Tier::kHost)]);
    const double host_f = evaluate(host_formula(run, e), psi, n).total();
    std::printf("%-11s %15s %15s %15s %15s %9s %9s %15s %15s %8.1f %10.4f %9.4f  %.16s\n", run.label().c_str(), pair(p, f.params).c_str(),
                pair(g, f.grads).c_str(), pair(o, f.optim).c_str(), pair(static_cast<double>(state), f.total()).c_str(),
                kib(max_over_ranks(r, Category::kGatheredParameters, true)).c_str(),
                kib(max_over_ranks(r, Category::kActivations, true)).c_str(), pair(static_cast<double>(host), host_f).c_str(),
                pair(static_cast<double>(sent_max(r)), formula_traffic(run.stage, psi, tied, n, e)).c_str(),
                r.mean_step_seconds * 1e3, r.losses.back(), r.final_val_loss, r.weights_sha256.c_str());
  }
  std::printf("\ngathered = stage 3's peak of whole units gathered for compute; activ. = peak activations (both per rank,\n"
              "not model state); host = offloaded state on the host tier (formula %s). Stage 3's formula counts the tied embedding (%.0f parameters) gathered twice more per step.\n"
              "Measured figures include padding (at most N-1 elements per unit) and the 8(N-1)-byte gradient-norm gather%s.\n",
              mark_text(host_formula(StageRun(2, true), e), true).c_str(), tied, c.fp16() ? " and fp16's (N-1)-byte overflow vote" : "");
}

// 1841280 -> "1,841,280"
std::string grouped(double v) {
  std::string digits = std::to_string(static_cast<long long>(v)), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// The lines under the figure's title: the run, and what the marks count in this precision.
std::vector<std::string> figure_notes(const TrainConfig& c, double psi, double tied, int n, const std::string& backend) {
  const ElementSizes e = element_sizes(c);
  const bool mixed = c.bf16() || c.fp16();
  const int b = static_cast<int>(e.b), k = static_cast<int>(e.k);
  return {
      cat("GPT ", c.model.shape.describe(), ": \u03a8 = ", grouped(psi), " parameters (E = ", grouped(tied), " of them in the tied "
          "embedding); N = ", n, " ranks (", backend, "); ", c.train_steps, " AdamW steps of ", c.train_batch_size, " x ",
          c.model.shape.seq_len, " tokens; ", precision_name(c), "."),
      cat("Every figure is per rank (the max over ranks). Marks in ", precision_name(c), ": ", b, "\u03a8 bytes of ", mixed ? "16-bit " : "", "parameters + ", b, "\u03a8 of ",
          mixed ? "16-bit " : "", "gradients + ", k, "\u03a8 of ", mixed ? "fp32 master weights, Adam's m and v (K = 12)" : "Adam's m and v",
          " = ", 2 * b + k, "\u03a8 in stage 0;"),
      cat("a /N term is sharded over the N ranks. Offload moves the shard to the host (", mark_text(host_formula(StageRun(2, true), e), false),
          ") and leaves the device only the parameters it computes with."),
      cat("Traffic marks: 2\u03a8(N\u22121)/N elements in stages 0-2 (reduce-scatter + all-gather, or one all-reduce); "
          "(3\u03a8 + 2E)(N\u22121)/N in stage 3,"),
      cat("whose parameters are gathered again in backward, the tied embedding twice more; ", b, " bytes an element.")};
}

Parts parts_of(const TrainResult& r, std::initializer_list<std::pair<Category, const char*>> which, bool peak, int tier) {
  Parts parts;
  for (const auto& [c, name] : which) parts.emplace_back(name, static_cast<double>(max_over_ranks(r, c, peak, tier)));
  return parts;
}

FigureRun figure_run(const StageRun& run, const std::vector<StageRun>& runs, double psi, double tied, int n, ElementSizes e) {
  const TrainResult& r = run.result;
  const auto state = {std::pair{Category::kParameters, "parameters"}, std::pair{Category::kGradients, "gradients"},
                      std::pair{Category::kOptimizerState, "optimizer state"}};
  FigureRun f;
  f.label = run.label();
  f.state = parts_of(r, state, false, kDevice);
  f.state_mark = {mark_text(device_formula(run, e), false), evaluate(device_formula(run, e), psi, n).total()};
  if (run.offload_optimizer) {
    f.host = parts_of(r, state, false, static_cast<int>(Tier::kHost));
    f.host_mark = {mark_text(host_formula(run, e), true), evaluate(host_formula(run, e), psi, n).total()};
  }
  f.working = parts_of(r, {{Category::kActivations, "activations (peak)"}, {Category::kGatheredParameters, "gathered units (peak)"},
                           {Category::kCommBuffers, "comm buffers (peak)"}}, true, kDevice);
  for (auto [k, name] : {std::pair{Collective::kAllReduce, "all-reduce"}, std::pair{Collective::kReduceScatter, "reduce-scatter"},
                         std::pair{Collective::kAllGather, "all-gather"}}) {
    std::uint64_t m = 0;
    for (const RankFigures& rf : r.final_ranks) m = std::max(m, rf.sent[static_cast<int>(k)]);
    f.sent.emplace_back(name, static_cast<double>(m));
  }
  f.traffic_mark = {traffic_mark_text(run.stage, e), formula_traffic(run.stage, psi, tied, n, e)};
  f.losses = r.losses;
  f.weights_sha256 = r.weights_sha256;
  f.step_ms = r.mean_step_seconds * 1e3;
  if (run.checkpointing) {  // the same run without checkpointing, if there is one
    for (const StageRun& other : runs)
      if (!other.checkpointing && other.stage == run.stage && other.offload_optimizer == run.offload_optimizer &&
          other.offload_param == run.offload_param)
        f.baseline = other.label();
  }
  return f;
}

std::string svg_for(const std::vector<StageRun>& runs, const TrainConfig& c, int n, const std::string& backend, double tied) {
  const double psi = static_cast<double>(runs[0].result.num_parameters);
  Figure figure;
  figure.title = cat("ZeRO on ", n, " ranks: what each rank holds and sends, stage by stage, measured beside the paper's formulas",
                     c.model.checkpointing.enabled ? " (every run with activation checkpointing)" : "");
  figure.notes = figure_notes(c, psi, tied, n, backend);
  for (const StageRun& run : runs) figure.runs.push_back(figure_run(run, runs, psi, tied, n, element_sizes(c)));
  return render_demo_svg(figure);
}

nlohmann::json usage_json(const TrainResult& r, int tier, bool peak) {
  nlohmann::json rank0, max_over;
  for (int c = 0; c < kNumCategories; ++c) {
    std::uint64_t m = 0;
    for (const RankFigures& f : r.final_ranks) m = std::max(m, (peak ? f.peak : f.current)[tier][c]);
    rank0[category_name(static_cast<Category>(c))] = (peak ? r.final_ranks[0].peak : r.final_ranks[0].current)[tier][c];
    max_over[category_name(static_cast<Category>(c))] = m;
  }
  return {{"rank0", rank0}, {"max_over_ranks", max_over}};
}

nlohmann::json run_json(const StageRun& run, int n, double tied, ElementSizes e) {
  const TrainResult& r = run.result;
  const double psi = static_cast<double>(r.num_parameters);
  nlohmann::json memory;
  for (int t = 0; t < kNumTiers; ++t)
    memory[tier_name(static_cast<Tier>(t))] = {{"current", usage_json(r, t, false)}, {"peak", usage_json(r, t, true)}};
  nlohmann::json by_kind;
  for (int k = 0; k < kNumCollectives; ++k) {
    std::uint64_t m = 0;
    for (const RankFigures& f : r.final_ranks) m = std::max(m, f.sent[k]);
    by_kind[collective_name(static_cast<Collective>(k))] = m;
  }
  std::uint64_t state = 0;
  for (const RankFigures& f : r.final_ranks) state = std::max(state, f.current[kDevice][0] + f.current[kDevice][1] + f.current[kDevice][2]);
  const Formula f = evaluate(device_formula(run, e), psi, n);
  return {{"stage", run.stage},
          {"offload_optimizer", run.offload_optimizer},
          {"offload_param", run.offload_param},
          {"activation_checkpointing", run.checkpointing},
          {"ranks", n},
          {"psi", r.num_parameters},
          {"memory_bytes", memory},
          {"model_state_bytes", {{"measured_max_over_ranks", state}, {"formula", f.total()}, {"mark", mark_text(device_formula(run, e), false)},
                                 {"formula_by_category", {{"parameters", f.params}, {"gradients", f.grads}, {"optimizer_state", f.optim}}}}},
          {"traffic_bytes_per_step", {{"measured_max_over_ranks", sent_max(r)}, {"formula", formula_traffic(run.stage, psi, tied, n, e)},
                                      {"mark", traffic_mark_text(run.stage, e)},
                                      {"sent_by_collective", by_kind}}},
          {"step_seconds", r.mean_step_seconds},
          {"tokens_per_second", r.tokens_per_second},
          {"loss_per_step", r.losses},
          {"final_loss", r.losses.back()},
          {"validation_loss", {{"first", r.first_val_loss}, {"final", r.final_val_loss}}},
          {"weights_sha256", r.weights_sha256}};
}

TrainConfig demo_config(const Flags& flags, int world_size) {
  const int micro = static_cast<int>(flags.get_int("micro-batch", 1, 4096));
  nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", micro},
      {"gradient_accumulation_steps", 1},
      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 3e-3}, {"betas", {0.9, 0.95}}, {"weight_decay", 0.1}}}}},
      {"scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_min_lr", 0}, {"warmup_max_lr", 3e-3}, {"warmup_num_steps", 10}, {"warmup_type", "linear"}}}}},
      {"gradient_clipping", 1.0},
      {"zero_optimization", {{"stage", 0}}},
      {"train_steps", flags.get_int("steps", 1, 1000000)},
      {"model", {{"type", "gpt"}, {"vocab_size", 256}, {"n_ctx", 64}, {"n_embd", flags.get_int("n-embd", 8, 4096)},
                 {"n_layer", flags.get_int("n-layer", 1, 256)}, {"n_head", 4},
                 {"checkpoint_activations", flags.has("activation-checkpointing")}}},
      {"data", {{"val_fraction", 0.05}}}};
  const std::string dtype = flags.get("dtype");
  if (dtype == "bf16" || dtype == "fp16") j[dtype] = {{"enabled", true}};
  else if (dtype != "fp32") throw ConfigError(cat("[cli] --dtype '", dtype, "': use fp32, bf16 or fp16"));
  return parse_config(j, world_size);
}

// Stages 0-3, offload, and (unless every run checkpoints) stage 3 again with activation
// checkpointing: what it saves once ZeRO has sharded the model states.
std::vector<StageRun> demo_runs(bool all_checkpointed) {
  std::vector<StageRun> runs = {{0}, {1}, {2}, {3}, {2, true, false}, {3, true, true}};
  if (!all_checkpointed) runs.emplace_back(3, false, false, true);
  return runs;
}

struct OutputPaths {
  std::string svg, json;
};

// Rank 0, after the runs: the table, the figure, the JSON, and the bit-identity verdict.
int report(const std::vector<StageRun>& runs, const TrainConfig& c, Communicator& comm, const OutputPaths& out,
           const std::vector<NamedPath>& inputs) {
  const GptShape& s = c.model.shape;
  const double tied = static_cast<double>(s.vocab_size + s.seq_len) * s.channels;  // the embedding unit
  print_table(runs, c, comm.size(), comm.backend(), tied);
  print_across(runs, c, comm, tied);
  bool identical = true;
  for (const StageRun& r : runs) identical = identical && r.result.weights_sha256 == runs[0].result.weights_sha256;
  write_output_file({"--svg", out.svg}, svg_for(runs, c, comm.size(), comm.backend(), tied), inputs);
  std::printf("wrote %s\n", out.svg.c_str());
  if (!out.json.empty()) {
    nlohmann::json j = {{"model", {{"type", "gpt"}, {"shape", s.describe()}}}, {"steps", c.train_steps},
                        {"global_batch", c.train_batch_size}, {"backend", comm.backend()},
                        {"weights_identical_across_stages", identical}, {"runs", nlohmann::json::array()}};
    for (const StageRun& r : runs) {
      nlohmann::json run = run_json(r, comm.size(), tied, element_sizes(c));
      const double formula = run["traffic_bytes_per_step"]["formula"];
      run["traffic_bytes_per_step"]["across_nodes"] = {{"measured_max_over_ranks", sent_max(r.result, true)},
                                                       {"formula", across_share(comm) * formula}, {"nodes", comm.num_nodes()}};
      j["runs"].push_back(run);
    }
    write_output_file({"--json", out.json}, j.dump(2) + "\n", inputs);
    std::printf("wrote %s\n", out.json.c_str());
  }
  for (const StageRun& r : runs)
    if (!r.result.sample.empty()) std::printf("\nsample (stage %s):\n%s\n\n", r.label().c_str(), r.result.sample.c_str());
  if (!identical) {
    std::printf("ERROR: the runs ended with different weights; they must be bit-identical\n");
    return 1;
  }
  std::printf("final weights bit-identical across stages 0-3 and offload%s (sha256 %s)\n",
              runs.back().checkpointing ? ", and with activation checkpointing" : "", runs[0].result.weights_sha256.c_str());
  return 0;
}

}  // namespace

std::vector<FlagSpec> demo_flags() {
  return {{"ranks", "ranks to run on (in-process threads; under mpirun: the job's size)", true, "4"},
          {"comm", "backend: threads, mpi, or auto (mpi under mpirun, else threads)", true, "auto"},
          {"ranks-per-node", "--comm threads: arrange the thread ranks as nodes of this many consecutive ranks (the traffic's "
                             "inside/across-node split; under MPI the nodes are the machines)", true, ""},
          {"steps", "AdamW steps per run", true, "80"},
          {"micro-batch", "sequences per rank per step", true, "2"},
          {"n-embd", "GPT width C", true, "192"},
          {"n-layer", "GPT blocks L", true, "4"},
          {"data", "text to train on", true, "the Jargon File (Debian's jargon-text)"},
          {"dtype", "fp32, or bf16 / fp16 mixed precision (16-bit parameters, gradients and collectives)", true, "fp32"},
          {"activation-checkpointing", "every run checkpoints each GPT block (keeps its input, recomputes it in backward); "
                                       "without it, only the extra run 3+ckpt does", false, ""},
          {"json", "also write the results as JSON to this file", true, ""},
          {"svg", "write the figure (memory, traffic and loss per run) to this file", true, "zero-demo.svg"}};
}

int demo_main(const std::vector<std::string>& args) {
  Flags flags("zero demo", demo_flags(), args);
  if (flags.help()) {
    std::printf("Trains the same GPT under ZeRO stages 0-3, with offload, and stage 3 with activation checkpointing; prints\n"
                "measured memory and traffic per rank beside the paper's formulas and draws them (--svg).\n\n%s",
                flags.usage().c_str());
    return 0;
  }
  const std::string json_path = flags.get("json"), svg_path = flags.get("svg");
  const auto options = [&](int world_size) {
    TrainOptions o;
    o.config = demo_config(flags, world_size);
    o.data_path = flags.has("data") ? flags.get("data") : data::default_text_path();
    return o;
  };
  // The flags, the data and the output paths, checked once before any rank starts.
  const PlannedWorld world = planned_world(flags, false);
  const TrainOptions checked = options(world.size);
  if (flags.has("data") && data::load_tokens(checked.data_path).format != "text") {
    throw ConfigError(cat("[demo] ", checked.data_path, " holds llm.c token ids, but zero demo trains its byte-level GPT "
                          "(vocabulary 256) on text: give a text file, or train on it with zero train (model.vocab_size)"));
  }
  check_train_options(checked, world.size, world.backend);
  const std::vector<NamedPath> inputs = {{"the data file", checked.data_path}};
  check_output_paths({{"--svg", svg_path}, {"--json", json_path}}, inputs);
  return run_ranks(flags, [&](Communicator& comm, Ledger& ledger) {
    TrainOptions o = options(comm.size());
    o.ledger = &ledger;
    std::vector<StageRun> runs = demo_runs(o.config.model.checkpointing.enabled);
    for (StageRun& run : runs) {
      o.config.engine.stage = run.stage;
      o.config.engine.offload.optimizer = run.offload_optimizer;
      o.config.engine.offload.params = run.offload_param;
      o.config.model.checkpointing.enabled = run.checkpointing || flags.has("activation-checkpointing");
      o.sample_chars = run.offload_param ? 200 : 0;
      if (comm.rank() == 0) std::printf("training under stage %s ...\n", run.label().c_str()), std::fflush(stdout);
      run.result = train(o, comm);
    }
    o.config.model.checkpointing.enabled = flags.has("activation-checkpointing");
    if (comm.rank() != 0) return 0;
    return report(runs, o.config, comm, {svg_path, json_path}, inputs);
  });
}

}  // namespace zero::cli
