#include "planner/report.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "planner/nvme_advice.h"

namespace zero {

EstimateReport make_report(const PlanInput& input, const Capacity& capacity, std::optional<int> only_stage) {
  EstimateReport r;
  r.input = input;
  r.capacity = capacity;
  r.only_stage = only_stage;
  r.plans = plan_all(input, only_stage);
  r.recommendation = recommend(input, r.plans, capacity, only_stage);
  if (const auto nvme = nvme_tier_input(input, r.plans, capacity, r.recommendation)) {
    std::vector<Plan> rows = plan_nvme_rows(*nvme, only_stage);
    if (!rows.empty()) {
      r.plans.insert(r.plans.end(), rows.begin(), rows.end());
      r.recommendation = recommend(*nvme, r.plans, capacity, only_stage);
      r.nvme_added = true;
    }
  }
  PlanInput plain = input, ckpt = input;
  plain.checkpointing = {};
  ckpt.checkpointing.enabled = true;
  for (const Plan& p : r.plans) {
    const auto without = largest_micro_batch(plain, p.settings, capacity);
    if (!without) break;
    r.largest_batches.emplace_back(*without, *largest_micro_batch(ckpt, p.settings, capacity));
  }
  return r;
}

void add_step_times(EstimateReport& r, const Machine& machine) {
  r.machine = machine;
  r.step_times.clear();
  r.step_times_missing.clear();
  if (!machine.predicts()) return;
  for (const Plan& p : r.plans) {
    r.step_times_missing.push_back(step_time_missing(r.input, p, machine));
    r.step_times.push_back(r.step_times_missing.back().empty() ? predict_step_time(r.input, p, machine) : StepTime{});
  }
}

namespace {

// The table's unit: GiB, or MiB or KiB when its largest figure is below 1 GiB or 1 MiB, so that
// small models do not print as columns of 0.00.
struct TableUnit {
  const char* name;
  double bytes;
  double of(std::uint64_t b) const { return static_cast<double>(b) / bytes; }
};

TableUnit table_unit(const EstimateReport& r) {
  std::uint64_t most = 0;
  for (const Plan& p : r.plans) {
    most = std::max({most, p.device.total(), p.host.total(), p.host_per_node, p.nvme.total(), p.traffic.total(),
                     p.host_to_device_bytes + p.device_to_host_bytes});
  }
  if (most >= (1ull << 30)) return {"GiB", 1024.0 * 1024.0 * 1024.0};
  if (most >= (1ull << 20)) return {"MiB", 1024.0 * 1024.0};
  return {"KiB", 1024.0};
}

const char* fit_word(std::optional<bool> f) { return !f ? "?" : (*f ? "yes" : "NO"); }

// The nvme column is shown when a plan puts state on the NVMe tier.
bool shows_nvme(const EstimateReport& r) {
  return std::any_of(r.plans.begin(), r.plans.end(), [](const Plan& p) { return p.nvme.total() > 0; });
}

std::string header(const EstimateReport& r) {
  const PlanInput& in = r.input;
  const Plan& any = r.plans.front();
  const ModelDescription& m = in.model;
  std::string s = cat("zero estimate: ", m.name, " (", m.family, ": ", m.detail, ")\n");
  if (!m.source.empty()) s += cat("  shape of ", m.source, "\n");
  s += cat("  ", grouped(any.numel), " parameters in ", any.units, " units, the largest ", grouped(m.largest_unit()), "\n");
  s += cat("  ", in.ranks, in.ranks == 1 ? " rank, " : " ranks, ", any.ranks_per_node, " per node (", any.nodes,
           any.nodes == 1 ? " node" : " nodes", "); ", dtype_name(in.settings.precision.compute),
           !in.settings.precision.mixed() ? " (4-byte parameters, gradients, Adam m and v)"
                                        : " (2-byte parameters and gradients; fp32 master, m, v: K = 12)",
           "; micro-batch ", in.micro_batch, in.gradient_accumulation_steps > 1 ? cat(" x ", in.gradient_accumulation_steps, " accumulated") : "",
           "\n");
  s += cat("  device memory ", r.capacity.device ? gib(*r.capacity.device) + " per device" : std::string("not given (--device-memory)"),
           "; host memory ", r.capacity.host ? gib(*r.capacity.host) + " per node" : std::string("not given (--host-memory)"));
  char link[64];
  std::snprintf(link, sizeof link, "; host link %.1f GB/s\n", in.link_bandwidth / 1e9);
  return s + link;
}

// The stage column: 12 characters, wider for the longest labels ("3+opt+param+mics16").
int label_width(const EstimateReport& r) {
  std::size_t w = 12;
  for (const Plan& p : r.plans) w = std::max(w, p.label.size());
  return static_cast<int>(w);
}

std::string row(const EstimateReport& r, std::size_t i, const TableUnit& u) {
  const Plan& p = r.plans[i];
  const Fit f = check_fit(p, r.capacity);
  const TierBytes& d = p.device;
  char act[16];
  if (p.activations_modelled) {
    std::snprintf(act, sizeof act, "%8.2f", u.of(d[Category::kActivations]));
  } else {
    std::snprintf(act, sizeof act, "%8s", "n/m");
  }
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%-*s %8.2f %8.2f %8.2f %8.2f %8.2f %s %9.2f %4s | %8.2f %9.2f %4s | %9.2f %9.2f %9.2f %8.2f",
                label_width(r), p.label.c_str(), u.of(d[Category::kParameters]), u.of(d[Category::kGradients]),
                u.of(d[Category::kOptimizerState]), u.of(d[Category::kCommBuffers]),
                u.of(d[Category::kGatheredParameters]), act, u.of(d.total()), fit_word(f.device),
                u.of(p.host.total()), u.of(p.host_per_node), fit_word(f.host), u.of(p.traffic.total()), u.of(p.traffic.total_across()),
                u.of(p.host_to_device_bytes + p.device_to_host_bytes), p.link_seconds);
  std::string s = buf;
  if (shows_nvme(r)) {
    std::snprintf(buf, sizeof buf, " | %8.2f", u.of(p.nvme.total()));
    s += buf;
  }
  if (static_cast<int>(i) == r.recommendation.index) s += "  <- recommended";
  if (r.configured && *r.configured == p.label) s += "  (your config)";
  return s + "\n";
}

std::string table(const EstimateReport& r) {
  const TableUnit u = table_unit(r);
  std::string s = cat("\n", u.name,
                      " per rank    ", std::string(static_cast<std::size_t>(label_width(r) - 12), ' '),
                      "------------------------ device, at its peak ------------------------ |"
                      " ------ host ------- | ----------- per step -----------", shows_nvme(r) ? " |     nvme" : "", "\n");
  char buf[320];
  std::snprintf(buf, sizeof buf, "%-*s %8s %8s %8s %8s %8s %8s %9s %4s | %8s %9s %4s | %9s %9s %9s %8s%s\n", label_width(r), "stage",
                "params", "grads", "optim", "comm", "gathered", "activ.", "total", "fits", "rank", "node", "fits",
                "network", "across", "host link", "link s", shows_nvme(r) ? " |     rank" : "");
  s += buf;
  for (std::size_t i = 0; i < r.plans.size(); ++i) s += row(r, i, u);
  return s;
}

std::string notes(const EstimateReport& r) {
  const PlanInput& in = r.input;
  std::string s = "\n";
  s += "  device: by category at the moment of the peak of one step (transient unit gradients count as grads;\n"
       "    gathered: stage 3's whole units, the current and the prefetched one, or a unit and the one it borrows)\n";
  s += in.comm_scratch && in.ranks > 1
           ? "  comm: the MPI backend's reduce-scatter scratch (4 chunks of 1 MiB per peer at most, one call at a time) and reduced slices in flight\n"
           : "  comm: no reduce-scatter scratch (threads/self backend); reduced slices in flight only\n";
  if (!r.plans.front().activations_modelled) {
    s += "  activ.: n/m = not modelled for this model: the total excludes activations; leave room for them\n";
  }
  s += "  host: offloaded state per rank and per node (rank x ranks per node); network: bytes a rank sends per step\n";
  s += "    by all-reduce, reduce-scatter and all-gather; across: of them, to ranks on other nodes (rank 0's); +micsG:\n"
       "    hybrid sharding in groups of G ranks (zero_optimization.mics_shard_size); +qgz: stage 3's gradients as 4-bit\n"
       "    blocks (zero_quantized_gradients), across nodes only; host link: host<->device copies per\n"
       "    step with offload and their time, both directions one after the other\n";
  if (r.plans.back().settings.quantized_weights || r.plans.back().settings.hpz_partition_size > 1) {
    s += "  +qwZ: ZeRO++'s int8 parameter gathers (zero_quantized_weights); +hpZH: its secondary partition among H ranks of\n"
         "    a node (zero_hpz_partition_size), counted in params, so that the backward gathers inside the node\n";
  }
  if (shows_nvme(r)) {
    s += "  nvme: the swap file of a rank on nvme_path (fp32 masters, Adam's m and v); host then holds the gradient shard\n"
         "    and buffer_count sub-groups; every step reads and writes the whole swap file once\n";
    if (std::any_of(r.plans.begin(), r.plans.end(), [](const Plan& p) { return p.settings.offload.params_nvme; }))
      s += "  +nvme-param: the parameter slices in a second swap file (offload_param.nvme_path), read for every gather\n"
           "    through offload_param.buffer_count host buffers, written once a step\n";
    if (std::any_of(r.plans.begin(), r.plans.end(), [](const Plan& p) { return p.settings.offload.optimizer_nvme && p.settings.offload.zenflow.enabled; }))
      s += "  +nvme+zenflow: the file also holds ZenFlow's summed gradient (update_interval > 1); a step between the CPU's\n"
           "    updates reads and writes only that\n";
  }
  s += cat("  buckets: a unit larger than reduce_bucket_size (", in.settings.reduce_bucket_elements, ") or allgather_bucket_size (",
           in.settings.allgather_bucket_elements, ") elements moves in bucket-sized pieces, bounding comm scratch; stage 3's\n"
           "    prefetch, live cap, persistence and reuse settings are in these figures: they are the engine's own schedule run dry\n");
  s += cat("  fits: yes / NO / ? (capacity not given); the device within ", r.capacity.headroom * 100,
           "% headroom (--headroom: fragmentation, the framework's context and workspaces are not in these figures); "
           "1 GiB = 2^30 bytes\n");
  return s;
}

std::string largest_batches(const EstimateReport& r) {
  if (r.largest_batches.empty()) return "";
  std::string s = "\nlargest micro-batch that fits a device (within the headroom), without / with activation checkpointing:\n ";
  for (std::size_t i = 0; i < r.largest_batches.size(); ++i) {
    s += cat(" ", r.plans[i].label, ": ", r.largest_batches[i].first, " / ", r.largest_batches[i].second, i + 1 < r.largest_batches.size() ? ";" : "");
  }
  return s + "\n";
}

// "2             12.345      0.000     1.234 /    0.456      0.010     12.811      31234       38.1", with the NVMe
// tier the disk's whole and exposed seconds and the exposed share of the step before the step.
std::string step_table(const EstimateReport& r) {
  if (r.step_times.empty()) return "";
  const bool disk = shows_nvme(r);
  std::string s = cat("\nseconds per optimizer step, per device (", describe_machine(r.machine, disk), "):\n");
  char buf[320];
  std::snprintf(buf, sizeof buf, "%-12s %10s %10s %21s %10s%s %10s %12s %15s\n", "stage", "compute", "tensor-par", "comm (whole/exposed)",
                "optimizer", disk ? "   disk (whole/exposed, share)" : "", "step", "tokens/s", "TFLOP/s/device");
  s += buf;
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    const StepTime& t = r.step_times[i];
    if (!r.step_times_missing[i].empty()) {
      s += cat(r.plans[i].label, std::string(13 - std::min<std::size_t>(12, r.plans[i].label.size()), ' '), "needs ",
               r.step_times_missing[i], "\n");
      continue;
    }
    char disk_cells[64] = "";
    if (disk) std::snprintf(disk_cells, sizeof disk_cells, " %10.3f / %8.3f, %3.0f%%", t.disk, t.disk_exposed, 100 * t.disk_exposed / t.step);
    std::snprintf(buf, sizeof buf, "%-12s %10.3f %10.3f %10.3f / %8.3f %10.3f%s %10.3f %12.0f %15.1f\n", r.plans[i].label.c_str(), t.compute,
                  t.tensor_parallel, t.comm, t.comm_exposed, t.optimizer, disk_cells, t.step, t.tokens_per_second, t.tflops_per_device);
    s += buf;
  }
  const double per_token = flops_per_token(r.input.model, r.input.checkpointing.enabled);
  std::snprintf(buf, sizeof buf, "  FLOPs per token %.4g (6Ψ + 12LCT%s), %.0f tokens per step (all devices); the model: src/planner/step_time.h%s\n",
                per_token, r.input.checkpointing.enabled ? ", + the recomputed forward" : "",
                static_cast<double>(r.plans.front().ranks) * r.input.micro_batch * r.input.gradient_accumulation_steps *
                    (r.input.model.gpt ? r.input.model.gpt->seq_len : r.input.model.llama ? r.input.model.llama->seq_len : 0),
                r.machine.memory_bandwidth > 0 ? "" : "; device Adam and ZeRO++'s quantisation passes not counted (--memory-bandwidth)");
  s += buf;
  double quantize = 0;
  for (std::size_t i = 0; i < r.step_times.size(); ++i) quantize = std::max(quantize, r.step_times_missing[i].empty() ? r.step_times[i].quantize : 0);
  if (quantize > 0) {
    s += cat("  step: with ZeRO++'s quantisation passes on the device (up to ", quantize, " s; JSON: quantize), which no column shows\n");
  }
  if (disk) {
    s += "  disk: the swap files' bytes a step at the NVMe bandwidths (--disk-read-bandwidth, --disk-write-bandwidth); exposed:\n"
         "    what the disk adds to the step, the rest overlapping forward, backward or CPU Adam (docs/estimate.md), and its share\n";
  }
  return s;
}

std::string recommendation(const EstimateReport& r) {
  const Recommendation& rec = r.recommendation;
  std::string s = "\n";
  if (rec.index >= 0) {
    const Plan& p = r.plans[rec.index];
    s += cat("recommended: stage ", p.settings.stage,
             p.settings.offload.optimizer_nvme ? " with optimizer offload to NVMe" : p.settings.offload.optimizer ? " with optimizer offload" : "",
             p.settings.offload.params ? " and parameter offload" : "", "\n");
  } else {
    s += cat("recommended: nothing fits on ", r.input.ranks, r.input.ranks == 1 ? " rank" : " ranks", "\n");
  }
  for (const std::string& reason : rec.reasons) s += "  " + reason + "\n";
  if (r.nvme_added) {
    s += "  (the +nvme rows are planned because host offload does not fit the --host-memory given: in a config, "
         "zero_optimization.offload_optimizer {\"device\": \"nvme\", \"nvme_path\": a folder on a fast local disk})\n";
  }
  if (rec.index < 0) {
    for (const std::string& a : rec.alternatives) s += cat("  on these ranks: ", a, "\n");
    if (!rec.closest.empty()) s += cat("  nearest on ", r.input.ranks, r.input.ranks == 1 ? " rank: " : " ranks: ", rec.closest, "\n");
    s += rec.ranks_needed
             ? cat("  with ", *rec.ranks_needed, " ranks of these devices (", r.plans.front().ranks_per_node,
                   " per node), stage ", rec.label_needed, " would fit\n")
             : rec.alternatives.empty() && shows_nvme(r)
                   ? "  no number of these devices makes any configuration fit (more host memory)\n"
             : rec.alternatives.empty()
                   ? "  no number of these devices makes any configuration fit (more host memory, or the NVMe tier: offload_optimizer.device \"nvme\" in --config)\n"
                   : "  no number of these devices makes any configuration fit as it is: more ranks do not shrink a rank's activations\n";
  }
  if (rec.index >= 0 && !r.plans.front().activations_modelled) {
    s += "  (activations are not in these figures: keep room for them beside the total)\n";
  }
  return s;
}

}  // namespace

std::string format_report(const EstimateReport& r) {
  return header(r) + table(r) + notes(r) + largest_batches(r) + step_table(r) + recommendation(r);
}

namespace {

nlohmann::json tier_json(const TierBytes& t) {
  nlohmann::json j;
  for (int c = 0; c < kNumCategories; ++c) j[category_name(static_cast<Category>(c))] = t.bytes[c];
  j["total"] = t.total();
  return j;
}

nlohmann::json optional_json(std::optional<bool> b) { return b ? nlohmann::json(*b) : nlohmann::json(nullptr); }

nlohmann::json plan_json(const EstimateReport& r, std::size_t i) {
  const Plan& p = r.plans[i];
  const Fit f = check_fit(p, r.capacity);
  nlohmann::json j;
  j["label"] = p.label;
  j["stage"] = p.settings.stage;
  j["offload_optimizer"] = p.settings.offload.optimizer;
  j["offload_param"] = p.settings.offload.params;
  j["delayed_update"] = p.settings.offload.delayed_update;
  j["device_bytes"] = tier_json(p.device);
  j["host_bytes"] = tier_json(p.host);
  j["host_bytes_per_node"] = p.host_per_node;
  j["offload_optimizer_nvme"] = p.settings.offload.optimizer_nvme;
  j["nvme_bytes"] = tier_json(p.nvme);
  j["nvme_traffic_bytes_per_step"] = {{"read", p.nvme_read_bytes}, {"written", p.nvme_written_bytes}, {"parameters_read", p.nvme_param_read_bytes}};
  j["nvme_sub_groups"] = p.nvme_sub_groups;
  j["model_state_bytes"] = {{"device", p.persistent_device.model_states()}, {"host", p.host.model_states()}};
  j["padded_parameters"] = p.padded_numel;
  j["shard_parameters"] = p.shard_numel;
  nlohmann::json traffic, calls, across;
  for (int c = 0; c < kNumCollectives; ++c) {
    traffic[collective_name(static_cast<Collective>(c))] = p.traffic.sent[c];
    calls[collective_name(static_cast<Collective>(c))] = p.traffic.calls[c];
    across[collective_name(static_cast<Collective>(c))] = p.traffic.sent_across[c];
  }
  traffic["total"] = p.traffic.total();
  traffic["across_nodes"] = p.traffic.total_across();
  j["traffic_bytes_per_step"] = traffic;
  j["collective_calls_per_step"] = calls;
  j["traffic_across_bytes_per_step"] = across;
  j["host_link"] = {{"host_to_device_bytes", p.host_to_device_bytes},
                    {"device_to_host_bytes", p.device_to_host_bytes},
                    {"seconds", p.link_seconds}};
  if (i < r.step_times.size() && !r.step_times_missing[i].empty()) j["step_time"] = {{"missing", r.step_times_missing[i]}};
  if (i < r.step_times.size() && r.step_times_missing[i].empty()) {
    const StepTime& t = r.step_times[i];
    j["step_time"] = {{"compute", t.compute}, {"tensor_parallel", t.tensor_parallel}, {"comm", t.comm}, {"comm_exposed", t.comm_exposed},
                      {"optimizer", t.optimizer}, {"disk", t.disk}, {"disk_exposed", t.disk_exposed},
                      {"disk_exposed_share", t.step > 0 ? t.disk_exposed / t.step : 0.0}, {"quantize", t.quantize}, {"step", t.step}, {"tokens_per_step", t.tokens_per_step},
                      {"flops_per_token", t.flops_per_token}, {"tokens_per_second", t.tokens_per_second},
                      {"tflops_per_device", t.tflops_per_device}};
  }
  j["fits"] = {{"device", optional_json(f.device)}, {"host", optional_json(f.host)}, {"overall", f.fits()}};
  j["recommended"] = static_cast<int>(i) == r.recommendation.index;
  if (i < r.largest_batches.size()) {
    j["largest_micro_batch"] = {{"plain", r.largest_batches[i].first}, {"activation_checkpointing", r.largest_batches[i].second}};
  }
  j["configured"] = r.configured && *r.configured == p.label;
  return j;
}

}  // namespace

nlohmann::json report_json(const EstimateReport& r) {
  const PlanInput& in = r.input;
  const ModelDescription& m = in.model;
  nlohmann::json j;
  j["model"] = {{"name", m.name}, {"family", m.family}, {"shape", m.detail}, {"source", m.source},
                {"parameters", m.num_parameters()}, {"units", m.units.size()}, {"largest_unit", m.largest_unit()}};
  j["ranks"] = in.ranks;
  j["ranks_per_node"] = r.plans.front().ranks_per_node;
  j["nodes"] = r.plans.front().nodes;
  j["dtype"] = dtype_name(in.settings.precision.compute);
  j["micro_batch"] = in.micro_batch;
  j["gradient_accumulation_steps"] = in.gradient_accumulation_steps;
  j["comm_scratch"] = in.comm_scratch;
  j["link_bandwidth_bytes_per_s"] = in.link_bandwidth;
  j["device_memory_bytes"] = r.capacity.device ? nlohmann::json(*r.capacity.device) : nlohmann::json(nullptr);
  j["device_headroom"] = r.capacity.headroom;
  j["host_memory_bytes"] = r.capacity.host ? nlohmann::json(*r.capacity.host) : nlohmann::json(nullptr);
  j["activations_modelled"] = r.plans.front().activations_modelled;
  const EngineSettings& z = in.settings;
  j["zero_settings"] = {{"reduce_bucket_size", z.reduce_bucket_elements},
                        {"allgather_bucket_size", z.allgather_bucket_elements},
                        {"stage3_prefetch_bucket_size", z.stage3.prefetch_bucket},
                        {"stage3_max_live_parameters", z.stage3.max_live},
                        {"stage3_param_persistence_threshold", z.stage3.persistence_threshold},
                        {"stage3_max_reuse_distance", z.stage3.max_reuse_distance}};
  if (!r.step_times.empty()) {
    const Machine& machine = r.machine;
    j["machine"] = {{"peak_flops", machine.peak_flops}, {"achieved_fraction", machine.achieved_fraction}, {"memory_bandwidth", machine.memory_bandwidth},
                    {"intra_node_bandwidth", machine.intra_node_bandwidth}, {"inter_node_bandwidth", machine.inter_node_bandwidth},
                    {"latency", machine.latency}, {"host_memory_bandwidth", machine.host_memory_bandwidth},
                    {"disk_read_bandwidth", machine.disk_read_bandwidth}, {"disk_write_bandwidth", machine.disk_write_bandwidth},
                    {"model_parallel", machine.model_parallel},
                    {"comm_on_compute_cores", machine.comm_on_compute_cores}};
  }
  j["plans"] = nlohmann::json::array();
  for (std::size_t i = 0; i < r.plans.size(); ++i) j["plans"].push_back(plan_json(r, i));
  const Recommendation& rec = r.recommendation;
  j["recommendation"] = {
      {"label", rec.index >= 0 ? nlohmann::json(r.plans[rec.index].label) : nlohmann::json(nullptr)},
      {"reasons", rec.reasons},
      {"ranks_needed", rec.ranks_needed ? nlohmann::json(*rec.ranks_needed) : nlohmann::json(nullptr)},
      {"label_needed", rec.ranks_needed ? nlohmann::json(rec.label_needed) : nlohmann::json(nullptr)},
      {"closest", rec.closest},
      {"alternatives", rec.alternatives},
      {"nvme_rows_added", r.nvme_added}};
  return j;
}

}  // namespace zero
