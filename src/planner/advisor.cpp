#include "planner/advisor.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "planner/nvme_advice.h"

namespace zero {

std::string gib(std::uint64_t bytes) {
  const char* units[] = {"KiB", "MiB", "GiB"};
  if (bytes < 1024) return cat(bytes, " B");
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  for (; u < 2 && v >= 1024.0; ++u) v /= 1024.0;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

std::string grouped(std::uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

namespace {

// `bytes` beside `other` in a "needs X, more than Y" line: with the exact count when the two
// would print alike (37.58 MiB against 37.58 MiB hid the difference).
std::string gib_beside(std::uint64_t bytes, std::uint64_t other) {
  std::string text = gib(bytes);
  if (bytes != other && text == gib(other)) text += cat(" (", grouped(bytes), " bytes)");
  return text;
}

}  // namespace

std::optional<std::uint64_t> Capacity::usable_device() const {
  if (!device) return std::nullopt;
  return static_cast<std::uint64_t>(static_cast<double>(*device) * (1.0 - headroom));
}

Fit check_fit(const Plan& plan, const Capacity& capacity) {
  Fit f;
  if (capacity.device) f.device = plan.device.total() <= *capacity.usable_device();
  if (capacity.host) f.host = plan.host_per_node <= *capacity.host;
  return f;
}

namespace {
EngineSettings z_with_stage(EngineSettings s, int stage) {
  s.stage = stage;
  return s;
}
}  // namespace

std::vector<EngineSettings> estimate_settings(const EngineSettings& base, std::optional<int> only_stage) {
  std::vector<EngineSettings> out;
  auto add = [&](int stage, bool opt, bool param, bool nvme = false, bool param_nvme = false) {
    if (only_stage && *only_stage != stage) return;
    EngineSettings z = base;
    z.stage = stage;
    z.offload.optimizer = opt;
    z.offload.optimizer_nvme = nvme;
    z.offload.params = param;
    z.offload.params_nvme = param_nvme;
    // the engine has no DPU with offload_param, nor on the NVMe tier
    z.offload.delayed_update = base.offload.delayed_update && opt && !param && !nvme;
    z.offload.pin_memory = base.offload.pin_memory && (opt || param);        // a setting of offload: none without it
    // ZenFlow where the engine runs it: optimizer offload (host or NVMe) alone
    z.offload.zenflow.enabled = base.offload.zenflow.enabled && opt && !param;
    if (stage == 0) z.mics_shard_size = -1;  // hybrid sharding groups what a stage shards; stage 0 shards nothing
    if (stage != 3) z.quantized_weights = false, z.hpz_partition_size = 1, z.zero_quantized_gradients = false;  // ZeRO++ is stage 3's
    out.push_back(z);
  };
  if (compresses_all_reduce(base.optimizer)) {  // 1-bit and 0/1 Adam run at stage 0 only (engine/settings.cpp)
    add(0, false, false);
    if (only_stage && *only_stage != 0) check_settings(z_with_stage(base, *only_stage), "planner");
    return out;
  }
  for (int s = 0; s <= 3; ++s) add(s, false, false);
  for (int s = 1; s <= 3; ++s) add(s, true, false);
  add(3, true, true);
  if (base.offload.optimizer_nvme) {  // a config with the NVMe tier (and its nvme_path): its rows too
    for (int s = 1; s <= 3; ++s) add(s, true, false, true);
    add(3, true, true, true);
  }
  if (base.offload.params_nvme) {  // a config with offload_param on NVMe (its nvme_path): the optimizer on the host, and on NVMe
    add(3, true, true, false, true);
    if (base.offload.optimizer_nvme) add(3, true, true, true, true);
  }
  return out;
}

std::vector<Plan> plan_all(const PlanInput& input, std::optional<int> only_stage) {
  std::vector<Plan> plans;
  PlanInput in = input;
  for (const EngineSettings& z : estimate_settings(input.settings, only_stage)) {
    in.settings = z;
    plans.push_back(plan(in));
  }
  return plans;
}

std::optional<int> largest_micro_batch(const PlanInput& input, const EngineSettings& z, const Capacity& c) {
  if (!c.device || !(input.model.gpt || input.model.llama)) return std::nullopt;
  PlanInput in = input;
  in.settings = z;
  auto fits = [&](int b) {
    in.micro_batch = b;
    return check_fit(plan(in), Capacity{c.device, std::nullopt, c.headroom}).fits();
  };
  constexpr int kMost = 65536;
  if (!fits(1)) return 0;
  int lo = 1, hi = 2;  // fits(lo); hi: the first size tried that does not, or past kMost
  while (hi <= kMost && fits(hi)) lo = hi, hi *= 2;
  if (hi > kMost) return lo;
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

namespace {

// The labels the advisor weighs, most preferred first (see advisor.h); the offload ones carry
// "+dpu" when the delayed update was asked for.
std::vector<std::string> preference(const PlanInput& in, std::optional<int> only_stage) {
  std::vector<std::string> labels;
  for (const EngineSettings& z : estimate_settings(in.settings, only_stage)) {
    if (!only_stage) {
      // 1+opt is 2+opt by another name (with offload stage 1 sheds its gradients as stage 2
      // does); on many ranks stage 1 beats stage 0, on one rank nothing is sharded: stage 0.
      if (z.stage == 1 && z.offload.optimizer) continue;
      const bool stage0_only = compresses_all_reduce(in.settings.optimizer);
      if (!z.offload.optimizer && !stage0_only && (in.ranks == 1 ? z.stage > 0 : z.stage == 0)) continue;
    }
    labels.push_back(plan_label(z));
  }
  return labels;
}

const Plan* find(const std::vector<Plan>& plans, const std::string& label) {
  for (const Plan& p : plans)
    if (p.label == label) return &p;
  return nullptr;
}

std::string usable(const Capacity& c) {
  return cat(gib(*c.usable_device()), " usable of ", gib(*c.device), " per device (", c.headroom * 100, "% headroom)");
}

std::string per_device(const Plan& p, const Capacity& c) {
  return c.device ? cat(gib(p.device.total()), " of the ", usable(c))
                  : cat(gib(p.device.total()), " per device; no --device-memory given");
}

std::string host_part(const Plan& p, const Capacity& c) {
  if (p.host_per_node == 0) return "";
  return c.host ? cat(", host ", gib(p.host_per_node), " of ", gib(*c.host), " per node")
                : cat(", host ", gib(p.host_per_node), " per node; no --host-memory given");
}

std::string why_not(const Plan& p, const Fit& f, const Capacity& c) {
  std::string s = cat("stage ", p.label, ": does not fit: ");
  if (f.device == false) {
    const std::uint64_t room = *c.usable_device();
    s += cat("needs ", gib_beside(p.device.total(), room), " per device, more than the ", gib_beside(room, p.device.total()), " usable of ",
             gib(*c.device), " per device (", c.headroom * 100, "% headroom)");
  }
  if (f.device == false && f.host == false) s += "; ";
  if (f.host == false) {
    s += cat("needs ", gib_beside(p.host_per_node, *c.host), " of host memory per node, more than the ", gib_beside(*c.host, p.host_per_node));
  }
  return s;
}

std::string why_chosen(const Plan& p, const std::vector<Plan>& plans, const Capacity& c, double link) {
  const std::string fits = cat("stage ", p.label, ": fits (", per_device(p, c), host_part(p, c), ")");
  const std::string traffic = gib(p.traffic.total());
  if (p.ranks == 1 && p.label == "0") {
    return cat(fits, "; one rank has nothing to shard, so stage 0, with no collectives, is the cheapest");
  }
  if (p.settings.offload.optimizer_nvme) return nvme_reason(fits, p, plans, c);
  if (p.settings.offload.optimizer) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.2f s", p.link_seconds);
    return cat(fits, " only with offload: each step moves ", gib(p.host_to_device_bytes + p.device_to_host_bytes),
               " over the host link (", secs, " at ", link / 1e9, " GB/s), besides ", traffic,
               " of collectives per rank");
  }
  if (p.settings.stage == 1) return cat(fits, " at the cheapest traffic, that of plain data parallelism: ", traffic, " per rank per step");
  if (p.settings.stage == 2) return cat(fits, " at the same traffic as stage 1: ", traffic, " per rank per step");
  if (p.settings.stage == 3) {
    const Plan* two = find(plans, "2");
    return cat(fits, " but gathers every unit in forward and again in backward: ", traffic, " per rank per step",
               two ? cat(" instead of stage 2's ", gib(two->traffic.total())) : std::string(),
               " (1.5x, more with tied weights)");
  }
  return cat(fits, "; collectives: ", traffic, " per rank per step");
}

// The first preferred configuration that fits at `ranks`, if any.
std::optional<std::string> first_fit(const PlanInput& input, int ranks, const Capacity& c, std::optional<int> only_stage) {
  PlanInput in = input;
  in.ranks = ranks;
  const auto plans = plan_all(in, only_stage);
  for (const std::string& label : preference(in, only_stage)) {
    const Plan* p = find(plans, label);
    if (p && check_fit(*p, c).fits()) return label;
  }
  return std::nullopt;
}

// Grows the rank count (doubling, then bisecting) until a preferred configuration fits. Memory
// per rank and host per node shrink as ranks grow, so the first fit found is the smallest.
void search_ranks(const PlanInput& in, const Capacity& c, std::optional<int> only_stage, Recommendation& r) {
  std::int64_t limit = std::min<std::int64_t>(in.model.num_parameters(), 1 << 20);
  for (const UnitSpec& u : in.model.units) {
    std::int64_t n = 0;
    for (const ParamSpec& p : u.params) n += p.numel();
    limit = std::min(limit, n);  // the engine refuses more ranks than a unit has parameters
  }
  if (limit <= in.ranks) return;
  int lo = in.ranks, hi = -1;
  std::string label;
  for (std::int64_t k = std::max(2, in.ranks * 2); hi < 0; k *= 2) {
    const int ranks = static_cast<int>(std::min(k, limit));
    if (auto l = first_fit(in, ranks, c, only_stage)) {
      hi = ranks, label = *l;
    } else if (ranks == limit) {
      return;
    } else {
      lo = ranks;
    }
  }
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (auto l = first_fit(in, mid, c, only_stage)) {
      hi = mid, label = *l;
    } else {
      lo = mid;
    }
  }
  r.ranks_needed = hi;
  r.label_needed = label;
}

// The nearest miss: a preferred plan that fits the device but not the host (least host first),
// else the one that needs the least device memory.
std::string closest(const std::vector<Plan>& plans, const std::vector<std::string>& labels, const Capacity& c) {
  const Plan* best = nullptr;
  for (const std::string& label : labels) {
    const Plan* p = find(plans, label);
    if (p && check_fit(*p, c).device.value_or(true) && (!best || p->host_per_node < best->host_per_node)) best = p;
  }
  if (best) return cat("stage ", best->label, " fits the device; it needs ", gib(best->host_per_node), " of host memory per node");
  for (const std::string& label : labels) {
    const Plan* p = find(plans, label);
    if (p && (!best || p->device.total() < best->device.total())) best = p;
  }
  return best ? cat("stage ", best->label, " needs the least device memory: ", gib(best->device.total()), " per device")
              : std::string();
}


// Among the device-only configurations after `chosen` in the order that fit with the same
// traffic, the one with the most memory to spare (the lowest device peak), if lower than chosen's.
const Plan* more_to_spare(const Plan& chosen, const std::vector<Plan>& plans, const std::vector<std::string>& labels,
                          const Capacity& c) {
  if (chosen.settings.offload.optimizer) return nullptr;
  const Plan* best = &chosen;
  for (const std::string& label : labels) {
    const Plan* p = find(plans, label);
    if (!p || p->settings.offload.optimizer || p->traffic.total() != chosen.traffic.total() || !check_fit(*p, c).fits()) continue;
    if (p->device.total() < best->device.total()) best = p;
  }
  return best == &chosen ? nullptr : best;
}

// What fits on these ranks with the micro-batch (and the accumulation keeping the global batch)
// or the checkpointing of `in` changed: "stage 2 fits (...)", or empty.
std::string fit_with(const PlanInput& in, const Capacity& c, std::optional<int> only_stage) {
  const auto label = first_fit(in, in.ranks, c, only_stage);
  if (!label) return "";
  const auto plans = plan_all(in, only_stage);
  return cat("stage ", *label, " fits (", per_device(*find(plans, *label), c), ")");
}

void add_alternatives(const PlanInput& input, const Capacity& c, std::optional<int> only_stage, Recommendation& r) {
  const bool modelled = input.model.gpt || input.model.llama;
  if (!modelled) return;
  auto smaller_batch = [&](PlanInput in, const std::string& also) {
    for (int m = in.micro_batch - 1; m >= 1; --m) {
      if (input.micro_batch % m != 0) continue;  // the global batch kept exactly
      in.micro_batch = m;
      in.gradient_accumulation_steps = input.gradient_accumulation_steps * (input.micro_batch / m);
      const std::string fit = fit_with(in, c, only_stage);
      if (fit.empty()) continue;
      r.alternatives.push_back(cat("micro-batch ", m, " with gradient accumulation ", in.gradient_accumulation_steps,
                                   " (the same global batch)", also, ": ", fit));
      return true;
    }
    return false;
  };
  const bool by_batch = smaller_batch(input, "");
  if (input.checkpointing.enabled) return;
  PlanInput ck = input;
  ck.checkpointing.enabled = true;
  const std::string fit = fit_with(ck, c, only_stage);
  if (!fit.empty()) {
    r.alternatives.push_back(cat("activation checkpointing (--activation-checkpointing: each block's forward runs again in "
                                 "backward, about a third more compute): ", fit));
  } else if (!by_batch) {
    smaller_batch(ck, " and activation checkpointing");
  }
}

}  // namespace

Recommendation recommend(const PlanInput& input, const std::vector<Plan>& plans, const Capacity& capacity,
                         std::optional<int> only_stage) {
  Recommendation r;
  const std::vector<std::string> labels = preference(input, only_stage);
  for (const std::string& label : labels) {
    const Plan* p = find(plans, label);
    if (!p) continue;
    const Fit f = check_fit(*p, capacity);
    if (!f.fits()) {
      r.reasons.push_back(why_not(*p, f, capacity));
      continue;
    }
    r.reasons.push_back(why_chosen(*p, plans, capacity, input.link_bandwidth));
    const Plan* spare = more_to_spare(*p, plans, labels, capacity);
    if (spare) {
      r.reasons.push_back(cat("stage ", spare->label, ": fits (", per_device(*spare, capacity), ") at the same traffic (",
                              gib(spare->traffic.total()), " per rank per step) with ", gib(p->device.total() - spare->device.total()),
                              " more to spare than stage ", p->label, ": preferred"));
      p = spare;
    }
    r.index = static_cast<int>(p - plans.data());
    return r;
  }
  r.closest = closest(plans, labels, capacity);
  search_ranks(input, capacity, only_stage, r);
  add_alternatives(input, capacity, only_stage, r);
  return r;
}

}  // namespace zero
