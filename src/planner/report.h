// The planner's output: the table `zero estimate` prints (and the engine can print when it
// refuses a plan), and the same as JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/advisor.h"
#include "planner/step_time.h"

namespace zero {

struct EstimateReport {
  PlanInput input;                      // what was planned (input.settings: the bucket settings)
  std::vector<Plan> plans;              // one per configuration, as plan_all returns them
  Capacity capacity;
  Recommendation recommendation;
  std::optional<int> only_stage;        // --stage
  std::optional<std::string> configured;  // the label a config file asked for, if any
  // The NVMe tier's rows were added (planner/nvme_advice.h): host offload did not fit the host
  // memory given and the settings had no NVMe tier.
  bool nvme_added = false;
  // Per plan: the largest micro-batch that fits the device, without and with activation
  // checkpointing (largest_micro_batch); empty when the device capacity is not given or
  // activations are not modelled.
  std::vector<std::pair<int, int>> largest_batches;
  // With a machine that predicts (planner/step_time.h): each plan's step time, in plan order, or
  // (step_time_missing) what its prediction lacks.
  Machine machine;
  std::vector<StepTime> step_times;
  std::vector<std::string> step_times_missing;
};

// Fills report.machine and report.step_times for `machine` (nothing when it does not predict).
void add_step_times(EstimateReport& report, const Machine& machine);

// Plans every configuration for `input` and recommends one.
EstimateReport make_report(const PlanInput& input, const Capacity& capacity, std::optional<int> only_stage);

// The human-readable table, the notes on what is and is not modelled, and the recommendation.
std::string format_report(const EstimateReport& report);

// The same facts as JSON; every byte count is an integer number of bytes. Fields:
//   model {name, family, shape, source, parameters, units, largest_unit}, ranks, ranks_per_node,
//   nodes, dtype, micro_batch, gradient_accumulation_steps, comm_scratch, link_bandwidth_bytes_per_s,
//   device_memory_bytes, host_memory_bytes (null when not given), activations_modelled,
//   zero_settings {...}, machine {peak_flops, achieved_fraction, memory_bandwidth, intra_node_bandwidth,
//   inter_node_bandwidth, latency, host_memory_bandwidth, disk_read_bandwidth, disk_write_bandwidth, model_parallel,
//   comm_on_compute_cores} (with a step
//   time), plans [{label, stage, offload_optimizer, offload_param, delayed_update,
//     device_bytes {<category>..., total}, host_bytes {<category>..., total}, host_bytes_per_node,
//     model_state_bytes {device, host}, padded_parameters, shard_parameters,
//     traffic_bytes_per_step {<collective>..., total}, collective_calls_per_step {<collective>...},
//     offload_optimizer_nvme, nvme_bytes {...}, nvme_traffic_bytes_per_step {read, written, parameters_read},
//     nvme_sub_groups, host_link {host_to_device_bytes, device_to_host_bytes, seconds},
//     step_time {compute, tensor_parallel, comm, comm_exposed, optimizer, disk, disk_exposed, disk_exposed_share,
//       step (seconds), tokens_per_step,
//       flops_per_token, tokens_per_second, tflops_per_device} (with a machine that predicts),
//     fits {device, host, overall} (device/host null when that capacity is unknown), recommended,
//     configured}],
//   recommendation {label (null when nothing fits), reasons [...], ranks_needed, label_needed, closest,
//     alternatives, nvme_rows_added (planner/nvme_advice.h)}.
nlohmann::json report_json(const EstimateReport& report);

}  // namespace zero
