#include "engine/engine.h"

#include <cmath>
#include <cstring>

#include "backends/registry.h"
#include "common/error.h"
#include "common/trace.h"
#include "engine/optimizer.h"
#include "engine/quantized_reduce_scatter.h"
#include "engine/stage.h"

namespace zero {

std::unique_ptr<Stage> make_stage0(const StageContext& ctx);
std::unique_ptr<Stage> make_stage1(const StageContext& ctx);
std::unique_ptr<Stage> make_stage2(const StageContext& ctx);
std::unique_ptr<Stage> make_stage3(const StageContext& ctx);

namespace {

// The settings' combinations (engine/settings.cpp, the one validation config/ and the planner
// run too), the optimizer's hyperparameters, and the layout against the world size.
void check_config(const EngineConfig& config, const FlatLayout& layout) {
  check_settings(config, "engine");
  if (config.precision.compute == Dtype::kF16) check_loss_scaler(config.precision.loss_scaler);
  adam_step_scalars(config.adam, 1);  // validates the hyperparameters
  if (config.optimizer == OptimizerKind::kLamb) lamb_step_scalars(config.adam, config.lamb, 1);
  const int n = layout.shard_size();  // the ranks a unit is sliced among
  for (int u = 0; u < layout.num_units(); ++u) {
    const UnitPlace& unit = layout.unit(u);
    if (unit.numel < static_cast<std::size_t>(n)) {
      throw ConfigError(cat("[engine] unit '", unit.name, "' has ", unit.numel, " parameters, fewer than the ", n,
                            " ranks: some ranks would own only padding of it. Merge it into a neighbouring unit "
                            "or use at most ", unit.numel, " ranks"));
    }
  }
}

// One small collective at start-up: every rank must describe the same model, or the shards
// would not line up and the run would compute garbage (or hang on mismatched collectives).
void check_ranks_agree(const FlatLayout& layout, Communicator& comm) {
  struct Summary {
    std::uint64_t numel, units, fingerprint;
  };
  const Summary mine{layout.numel(), static_cast<std::uint64_t>(layout.num_units()), layout.fingerprint()};
  std::vector<Summary> all(comm.size());
  comm.all_gather_bytes(&mine, sizeof mine, all.data());
  std::string diff;
  for (int r = 1; r < comm.size(); ++r) {
    if (std::memcmp(&all[r], &all[0], sizeof(Summary)) != 0) {
      diff += cat("; rank ", r, " has ", all[r].numel, " parameters in ", all[r].units, " units (layout fingerprint ",
                  std::hex, all[r].fingerprint, std::dec, ")");
    }
  }
  if (!diff.empty()) {
    throw ConfigError(cat("[engine] the ranks disagree on the model: rank 0 has ", all[0].numel, " parameters in ",
                          all[0].units, " units (layout fingerprint ", std::hex, all[0].fingerprint, std::dec, ")",
                          diff, ". Every rank must build the same model with the same configuration"));
  }
}

// 1-bit Adam compresses on the host: the momentum must be in memory the CPU reads, and the
// communicator must read host memory. Its Adam is DeepSpeed's OnebitAdam's: decoupled decay,
// no bias correction (DeepSpeed keeps the bias_correction flag and never reads it).
void check_onebit_placement(const Device& device, const Communicator& comm, AdamConfig& adam) {
  if (!device.transport_is_host() || comm.reads_device_memory()) {
    throw ConfigError("[engine] optimizers OneBitAdam and ZeroOneAdam compress the momentum on the CPU, and this run keeps it in GPU memory or "
                      "communicates through a GPU library: run it on the cpu device with the threads or mpi communicator");
  }
  adam.decoupled = true;
  adam.bias_correction = false;
}

// ZeRO++ qwZ quantises on the CPU (engine/quantize.h): the parameters' slices must be in memory
// the CPU reads, and the communicator must read host memory.
void check_qwz_placement(const Device& device, const Communicator& comm) {
  if (!device.transport_is_host() || comm.reads_device_memory()) {
    throw ConfigError("[engine] zero_optimization.zero_quantized_weights quantises on the CPU, and this run keeps the parameters in GPU "
                      "memory or communicates through a GPU library: not supported yet; run it on the cpu device with the threads or "
                      "mpi communicator, or remove the key");
  }
}

}  // namespace

std::unique_ptr<Stage> make_stage(int stage, const StageContext& ctx) {
  ZERO_CHECK(stage >= 0 && stage <= 3, "make_stage(", stage, "): the settings were not checked");
  switch (stage) {
    case 0: return make_stage0(ctx);
    case 1: return make_stage1(ctx);
    case 2: return make_stage2(ctx);
    default: return make_stage3(ctx);
  }
}

namespace {

// Ranks sharing this node's host memory (thread ranks: one node).
int ranks_on_this_node(const Communicator& comm) { return comm.local_size(); }

// The layout's shard size, once the settings have been checked against the world.
int checked_shard_size(const EngineSettings& settings, int world_size) {
  check_world(settings, world_size, "engine");
  return shard_group_size(settings, world_size);
}

}  // namespace

Engine::Engine(const EngineConfig& config, Module& module, Communicator& comm, Ledger& ledger)
    : config_(config), module_(module), comm_(comm), layout_(module.units(), comm.size(), checked_shard_size(config, comm.size())),
      shards_(&comm) {
  check_config(config_, layout_);
  check_ranks_agree(layout_, comm_);
  device_ = make_device(config_.device, ledger);
  device_->set_tracer(config_.tracer);
  make_shard_groups();
  if (compresses_all_reduce(config_.optimizer)) check_onebit_placement(*device_, comm_, config_.adam);
  collectives_ = std::make_unique<Collectives>(*shards_, *device_, config_.reduce_bucket_elements, config_.allgather_bucket_elements,
                                               config_.gradient_predivide_factor, config_.overlap_comm);
  collectives_->set_replicas(replica_comm_.get());
  make_hpz_group();
  if (config_.quantized_weights) check_qwz_placement(*device_, comm_);
  if (config_.zero_quantized_gradients && comm_.num_nodes() > 1) {  // DeepSpeed's qgZ, too, runs only across nodes
    quantized_reduce_ = std::make_unique<QuantizedReduceScatter>(comm_, *device_, layout_.largest_unit() / static_cast<std::size_t>(comm_.size()));
    collectives_->set_quantized_reduce(quantized_reduce_.get());
  }
  // The placement: where the stage-3 parameter shard and the optimizer live.
  const Dtype dtype = config_.precision.compute;
  if (config_.offload.optimizer) check_host_room(*device_, layout_.shard_numel(), config_.offload, ranks_on_this_node(comm_), dtype);
  const Tier shard_tier = config_.offload.params_nvme ? Tier::kNvme : config_.offload.params ? Tier::kHost : Tier::kDevice;
  stage_ = make_stage(config_.stage, {layout_, *collectives_, *device_, config_.seed, shard_tier, config_.stage3, dtype,
                                      config_.offload.param_nvme, config_.offload.pin_memory, config_.quantized_weights,
                                      hpz_collectives_.get()});
  OptimizerContext octx{layout_, *device_, stage_->optimizer_parts()};
  for (const OptimizerPart& p : octx.parts) octx.state_numel = std::max(octx.state_numel, p.offset + p.params.size());
  octx.sheds_gradients = stage_->sheds_gradients();
  if (dtype == Dtype::kF16) scaler_ = std::make_unique<LossScaler>(config_.precision.loss_scaler);
  octx.adam_waits_for_step = config_.gradient_clipping > 0.0f || scaler_ ||  // fp16: the overflow check decides first
                             config_.optimizer == OptimizerKind::kLamb;  // Lamb's norms need every part's moments
  octx.dtype = dtype;
  octx.seed = config_.seed;
  octx.offload = config_.offload;
  octx.local_ranks = ranks_on_this_node(comm_);
  octx.rank = comm_.rank();
  octx.predivide = config_.gradient_predivide_factor;
  octx.kind = config_.optimizer;
  octx.onebit = config_.onebit;
  octx.zero_one = config_.zero_one;
  octx.comm = &comm_;
  octx.param_sink = stage_->param_sink();
  octx.bias_correction = config_.adam.bias_correction;
  octx.gradient_clipping = config_.gradient_clipping;
  octx.norm_group = shards_;
  optimizer_ = make_optimizer(octx);
  stage_->set_optimizer(optimizer_.get());
}

Engine::~Engine() = default;

// Hybrid sharding's two communicators, as DeepSpeed's MiCS makes them: groups of G consecutive
// ranks shard the state; the ranks with the same index in every group replicate one slice.
void Engine::make_shard_groups() {
  const int g = layout_.shard_size(), n = comm_.size();
  if (g == n) return;
  const int first = comm_.rank() / g * g, index = comm_.rank() % g;
  std::vector<int> group, replicas;
  for (int r = first; r < first + g; ++r) group.push_back(r);
  for (int r = index; r < n; r += g) replicas.push_back(r);
  group_comm_ = comm_.split_members(group);
  replica_comm_ = comm_.split_members(replicas);
  shards_ = group_comm_.get();
}

// ZeRO++ hpZ: this rank's group of H ranks of its node (consecutive in the node's rank order),
// among which the secondary partition is kept. The nodes must hold as many ranks each, a
// multiple of H (check_nodes; the CLI checks thread ranks before they start).
void Engine::make_hpz_group() {
  const int h = config_.hpz_partition_size;
  if (h <= 1 || config_.stage != 3) return;
  const NodeTopology& t = comm_.topology();
  std::vector<std::vector<int>> nodes(static_cast<std::size_t>(t.num_nodes));
  for (int r = 0; r < comm_.size(); ++r) nodes.at(t.node_of.empty() ? t.node : t.node_of[r]).push_back(r);
  std::vector<int> sizes;
  for (const std::vector<int>& n : nodes) sizes.push_back(static_cast<int>(n.size()));
  check_nodes(config_, sizes, "engine");
  const std::vector<int>& mine = nodes.at(t.node);
  const auto first = mine.begin() + t.local_rank / h * h;
  try {
    hpz_comm_ = comm_.split_members(std::vector<int>(first, first + h));
  } catch (const CommError& e) {
    throw ConfigError(cat("[engine] zero_optimization.zero_hpz_partition_size needs a communicator that splits into groups: ", e.what(),
                          "; or remove the key"));
  }
  hpz_collectives_ = std::make_unique<Collectives>(*hpz_comm_, *device_, config_.reduce_bucket_elements,
                                                   config_.allgather_bucket_elements, config_.gradient_predivide_factor, config_.overlap_comm);
}

Traffic Engine::traffic_now() const {
  Traffic t = comm_.traffic();
  if (group_comm_) t = t + group_comm_->traffic() + replica_comm_->traffic();
  if (hpz_comm_) t = t + hpz_comm_->traffic();
  if (quantized_reduce_) t = t + quantized_reduce_->traffic();
  return t;
}

// The replicas' communicator takes its context from the collectives that issue on it.
void Engine::set_context(const std::string& context) {
  comm_.set_context(context);
  if (group_comm_) group_comm_->set_context(context);
  if (hpz_comm_) hpz_comm_->set_context(context);
}

// The training step, as in the paper: forward, backward with gradient reduction as units
// complete, the optimizer on this rank's shard, then whatever gathering the stage needs.
float Engine::train_step() {
  const float loss = forward_backward(true);
  step();
  return loss;
}

float Engine::forward_backward(bool last) {
  if (last_seen_) {
    throw ConfigError("[engine] forward_backward after the step's last micro-batch (last = true): call step() first");
  }
  if (micro_batches_ == 0) {
    step_start_traffic_ = traffic_now();
    step_start_own_traffic_ = optimizer_->own_traffic();
    step_start_to_host_ = device_->link_bytes().to_host;
    step_start_to_device_ = device_->link_bytes().to_device;
    step_start_disk_read_ = optimizer_->disk_traffic().read + stage_->disk_traffic().read;
    step_start_disk_written_ = optimizer_->disk_traffic().written + stage_->disk_traffic().written;
    step_start_param_disk_read_ = stage_->disk_traffic().read;
  }
  last_seen_ = last;
  set_context(cat("step ", step_ + 1, ", micro-batch ", micro_batches_ + 1));
  optimizer_->set_loss_scale(loss_scale());
  stage_->begin_micro_batch(micro_batches_ == 0, last);
  optimizer_->begin_micro_batch(micro_batches_ == 0, last);
  if (last) optimizer_->prepare(adam_step_scalars(config_.adam, applied_ + 1));
  forward();
  backward();
  ++micro_batches_;
  return module_.loss();
}

StepReport Engine::step() {
  if (micro_batches_ == 0 || !last_seen_) {
    throw ConfigError("[engine] step() before the step's last micro-batch: call forward_backward(true) for the last one");
  }
  last_seen_ = false;
  set_context(cat("step ", step_ + 1, ", optimizer"));
  stage_->finish_reduction();
  optimizer_->finish();
  micro_batches_ = 0;
  StepReport report;
  report.lr = config_.adam.lr;
  report.loss_scale = loss_scale();
  ++step_;
  // fp16, dynamic or static scale: DeepSpeed checks every step for overflow and skips the step
  // on one (its FP16_Optimizer and ZeRO optimizers call has_overflow whatever the scale; a static
  // LossScaler only leaves the scale as it is).
  if (scaler_) {
    report.skipped = any_rank_overflowed();
    scaler_->update(report.skipped);  // TrainingError when the scale is at its minimum and still overflows
  }
  if (report.skipped) {  // DeepSpeed's rule: no update, no Adam step; the parameters stay as they are
    ++skipped_;
  } else {
    if (config_.gradient_clipping > 0.0f || config_.report_grad_norm) report.grad_norm = global_grad_norm();
    if (config_.gradient_clipping > 0.0f) {
      // DeepSpeed's rule: scale by max_norm / (norm + 1e-6) when that is below one.
      const double coef = config_.gradient_clipping / (report.grad_norm + 1e-6);
      if (coef < 1.0) {
        optimizer_->scale(static_cast<float>(coef));
        report.clipped = true;
      }
    }
    if (config_.optimizer == OptimizerKind::kLamb) lamb_step();
    else optimizer_->step(adam_step_scalars(config_.adam, ++applied_));
    stage_->gather_parameters();
  }
  last_traffic_ = traffic_now() - step_start_traffic_;
  last_traffic_ = last_traffic_ + (optimizer_->own_traffic() - step_start_own_traffic_);  // 1-bit Adam's pair communicators
  last_to_host_ = device_->link_bytes().to_host - step_start_to_host_;
  last_to_device_ = device_->link_bytes().to_device - step_start_to_device_;
  last_disk_read_ = optimizer_->disk_traffic().read + stage_->disk_traffic().read - step_start_disk_read_;  // both swap files
  last_disk_written_ = optimizer_->disk_traffic().written + stage_->disk_traffic().written - step_start_disk_written_;
  last_param_disk_read_ = stage_->disk_traffic().read - step_start_param_disk_read_;
  return report;
}

float Engine::loss_scale() const { return scaler_ ? scaler_->scale() : 1.0f; }

// fp16: each rank checks its slices of the reduced gradients for inf and NaN; one byte per rank
// gathered, so every rank sees the same answer and skips (or not) together.
bool Engine::any_rank_overflowed() {
  const std::uint8_t mine = optimizer_->nonfinite() ? 1 : 0;
  std::vector<std::uint8_t> all(comm_.size());
  comm_.all_gather_bytes(&mine, 1, all.data());
  for (std::uint8_t f : all)
    if (f != 0) return true;
  return false;
}

// The norm of the whole reduced gradient: each rank sums the squares of its slices in double,
// the partial sums are gathered (over the shard group: with hybrid sharding the other groups
// hold the same slices) and added in rank order. Every stage sums the same elements in
// the same order, so the norm (and clipping) is the same in every stage, and equals the norm
// of the unsharded gradient up to that summation order.
double Engine::global_grad_norm() {
  const double partial = optimizer_->sum_squares();
  if (optimizer_->local_gradients()) return std::sqrt(partial);  // 1-bit Adam: each rank's own gradient, as DeepSpeed clips it
  std::vector<double> partials(shards_->size());
  shards_->all_gather_bytes(&partial, sizeof partial, partials.data());
  double total = 0.0;
  for (double p : partials) total += p;
  return std::sqrt(total);
}

// Lamb: each rank's moments and its partial sums per parameter tensor, one small collective of
// those sums (two doubles per tensor), added in rank order as the gradient norm's partial sums
// are, so every stage (which sums the same slices) gets the same trust ratios; then the update.
void Engine::lamb_step() {
  const LambStep s = lamb_step_scalars(config_.adam, config_.lamb, ++applied_);
  const std::size_t params = lamb_param_count(layout_);
  std::vector<LambNorms> mine(params);
  optimizer_->lamb_moments(s, mine);
  std::vector<LambNorms> all(params * static_cast<std::size_t>(shards_->size()));
  shards_->all_gather_bytes(mine.data(), params * sizeof(LambNorms), all.data());  // the group's slices: see global_grad_norm
  std::vector<float> coef(params);
  for (std::size_t i = 0; i < params; ++i) {
    LambNorms total;
    for (int r = 0; r < shards_->size(); ++r) {
      total.param += all[r * params + i].param;
      total.update += all[r * params + i].update;
    }
    coef[i] = lamb_coefficient(s, total);
  }
  optimizer_->lamb_update(s, coef);
}

void Engine::set_learning_rate(float lr) {
  AdamConfig next = config_.adam;
  next.lr = lr;
  adam_step_scalars(next, 1);  // validates
  config_.adam = next;
}

float Engine::evaluate() {
  ZERO_CHECK(micro_batches_ == 0, "evaluate() in the middle of gradient accumulation");
  forward();
  stage_->end_of_uses();  // no backward follows: what forward kept whole for it goes
  return module_.loss();
}

void Engine::synchronize() {
  // The step's gathers may still read this rank's slices, which the delayed update's copy writes
  // (a data race found by ThreadSanitizer, scripts/sanitize.sh).
  stage_->wait_parameter_gathers();
  if (optimizer_->synchronize()) stage_->gather_parameters();
}

std::vector<float> Engine::full_parameters() {
  synchronize();
  std::vector<float> out(layout_.numel());
  copy_full_parameters(*stage_, layout_, *device_, out);
  return out;
}

}  // namespace zero
