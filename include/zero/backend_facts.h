// What each backend is, by name, for the code that chooses, checks and reports (config
// validation, help texts, model FLOPs utilisation), without its factories: so a reader of configs
// links none of the devices. Each backend folder gives its facts (backends/<name>/*_facts.cpp);
// the factories are backends/registry.h's.
#pragma once

#include <string>
#include <vector>

#include "zero/dtype.h"

namespace zero {

struct BackendFacts {
  std::string name;             // what "device" in a config and --device select
  std::string summary;          // a few words, for --help and errors
  bool for_users = true;        // false: the test and planner devices (strict, counting)
  std::string role;             // what a device not for users is for ("tests")
  bool device_tier_is_host = true;  // the device tier is host RAM (the host-memory check counts it)
  // One device's dense peak FLOP/s by the matrix products' dtype, and whose it is ("an H200's");
  // 0 where unknown (then no model FLOPs utilisation is printed).
  double peak_f32 = 0, peak_bf16 = 0, peak_f16 = 0;
  std::string peak_label;
  // Where the backend cannot run: what is missing, and what it needs ("no CUDA device", "a GPU").
  std::string missing, needs;
  // Its attention kernels use one layer's scores and their gradient as scratch (B x heads x T x T
  // f32 each, GPT and LLaMA): the models allocate it, and the planner counts it, only where true.
  bool attention_scores = true;
  double peak_flops(Dtype d) const;
};

// Every backend's facts, in registration order (the first is the default device).
const std::vector<BackendFacts>& backend_facts();
// The facts of backend `name`; ConfigError starting with `component`, listing every name (those
// not for users with their role), otherwise.
const BackendFacts& find_facts(const std::string& name, const std::string& component = "[device]");
// The names users may select, for help texts and errors: "cpu or cuda".
std::string backend_names();
bool is_user_backend(const std::string& name);

// The device a run computes on when nothing says otherwise, and the planner's dry-run device.
const std::string& default_device();
const std::string& planner_device();

}  // namespace zero
