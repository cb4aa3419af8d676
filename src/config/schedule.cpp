// "scheduler": DeepSpeed's WarmupLR, WarmupDecayLR and WarmupCosineLR
// (deepspeed/runtime/lr_schedules.py), with its parameter names, defaults and formulas. Where
// DeepSpeed warns and carries on (an unknown warmup_type becomes "log"), zero stops with an error.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "common/error.h"
#include "config/reader.h"

namespace zero {

namespace {

// DeepSpeed's _get_gamma warm-up part: from 0 at last_batch_iteration 0 to 1 at warmup_num_steps.
// w is max(2, warmup_num_steps), as DeepSpeed stores it.
double warmup_gamma(WarmupType type, std::int64_t it, std::int64_t w) {
  if (type == WarmupType::log) return (1.0 / std::log(static_cast<double>(w))) * std::log(static_cast<double>(it + 1));
  return static_cast<double>(it) / static_cast<double>(w);
}

}  // namespace

float Schedule::lr_at(std::int64_t step, float base_lr) const {
  if (type == ScheduleType::none) return base_lr;
  const std::int64_t it = step - 1;  // DeepSpeed's last_batch_iteration (see config.h)
  const std::int64_t w = std::max<std::int64_t>(2, warmup_num_steps);
  if (type == ScheduleType::warmup_cosine) {
    if (it < 0) return 0.0f;  // DeepSpeed's get_lr before the first scheduler.step()
    double ratio;
    if (it < w) {
      ratio = warmup_min_ratio + warmup_gamma(warmup_type, it, w) * (1.0 - warmup_min_ratio);
    } else {
      const double real_last_step = static_cast<double>(it - w + 1);
      const double real_total_steps = static_cast<double>(std::max<std::int64_t>(1, total_num_steps - w));
      const double progress = std::min(1.0, real_last_step / real_total_steps);  // held at the floor after the end
      const double cosine = (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
      ratio = std::max(0.0, cos_min_ratio + (1.0 - cos_min_ratio) * cosine);
    }
    return static_cast<float>(static_cast<double>(base_lr) * ratio);
  }
  const double min_lr = warmup_min_lr;
  const double delta = warmup_max_lr.value_or(static_cast<double>(base_lr)) - min_lr;
  if (it < 0) return static_cast<float>(min_lr);
  double gamma = 1.0;
  if (it < w) {
    gamma = warmup_gamma(warmup_type, it, w);
  } else if (type == ScheduleType::warmup_decay) {
    gamma = std::max(0.0, static_cast<double>(total_num_steps - it) / std::max(1.0, static_cast<double>(total_num_steps - w)));
  }
  return static_cast<float>(min_lr + delta * gamma);
}

namespace config_detail {

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::vector<KeyRule> schedule_rules(ScheduleType type) {
  const Use R = Use::read, U = Use::unsupported;
  const JsonType kNum = JsonType::number, kInt = JsonType::integer;
  std::vector<KeyRule> rules = {
      {"warmup_num_steps", R, kInt, ""},
      {"warmup_type", R, JsonType::string, ""},
      {"last_batch_iteration", U, kInt, "starting the schedule part-way (DeepSpeed's resume); a checkpoint restores the step", -1},
  };
  if (type == ScheduleType::warmup_cosine) {
    rules.insert(rules.end(), {{"total_num_steps", R, kInt, ""}, {"warmup_min_ratio", R, kNum, ""}, {"cos_min_ratio", R, kNum, ""}});
  } else {
    rules.insert(rules.end(), {{"warmup_min_lr", R, kNum, ""}, {"warmup_max_lr", R, kNum, ""}});
    if (type == ScheduleType::warmup_decay) rules.push_back({"total_num_steps", R, kInt, ""});
  }
  // The Hugging Face Trainer fills these in (trainer_config_process and _finalize).
  std::vector<const char*> autos = {"warmup_num_steps"};
  if (type != ScheduleType::warmup_cosine) autos.insert(autos.end(), {"warmup_min_lr", "warmup_max_lr"});
  if (type != ScheduleType::warmup) autos.push_back("total_num_steps");
  for (KeyRule& r : rules) {
    for (const char* a : autos) r.auto_ok = r.auto_ok || r.name == a;
  }
  return rules;
}

void declare_autos(const Section& p, const AutoContext& ctx) {
  p.set_auto("warmup_num_steps", 1000, "zero's default, DeepSpeed's; the Trainer would use its --warmup_steps: set it with --set scheduler.params.warmup_num_steps=N");
  p.set_auto("warmup_min_lr", 0.0, "as the Hugging Face Trainer fills it in");
  p.set_auto("warmup_max_lr", static_cast<double>(ctx.lr), "the optimizer's lr, as the Hugging Face Trainer fills it in from its learning rate");
  p.set_auto("total_num_steps", ctx.train_steps, "the run's train_steps (--steps), as the Hugging Face Trainer fills in its number of training steps");
}

ScheduleType schedule_type(const Section& sched) {
  if (!sched.present("type")) sched.fail("type", "is missing; set \"WarmupLR\", \"WarmupDecayLR\" or \"WarmupCosineLR\"");
  if (!sched.has("type")) return ScheduleType::none;
  const std::string name = sched.get_string("type", "");
  if (name == "WarmupLR") return ScheduleType::warmup;
  if (name == "WarmupDecayLR") return ScheduleType::warmup_decay;
  if (name == "WarmupCosineLR") return ScheduleType::warmup_cosine;
  if (name == "OneCycle" || name == "LRRangeTest") {
    sched.fail("type", cat("\"", name, "\" is known but not supported yet: zero has WarmupLR, WarmupDecayLR and WarmupCosineLR; use one of them"));
    return ScheduleType::none;
  }
  sched.fail("type", cat("\"", name, "\" is not a DeepSpeed scheduler zero knows; did you mean \"",
                         nearest(name, {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle", "LRRangeTest"}), "\"?"));
  return ScheduleType::none;
}

double non_negative(const Section& p, const std::string& key, double fallback) {
  const double v = p.get_number(key, fallback);
  if (v < 0) p.fail(key, cat("is ", v, "; it must be >= 0"));
  return v;
}

void read_schedule_params(const Section& p, Schedule& s) {
  // DeepSpeed raises for warmup_num_steps <= 0 and then uses max(2, warmup_num_steps).
  s.warmup_num_steps = p.get_int("warmup_num_steps", s.warmup_num_steps, 1, kMax);
  const std::string wt = p.get_string("warmup_type", "log");
  if (wt == "log") s.warmup_type = WarmupType::log;
  else if (wt == "linear") s.warmup_type = WarmupType::linear;
  else p.fail("warmup_type", cat("is \"", wt, "\"; it must be \"log\" or \"linear\" (DeepSpeed would fall back to log)"));
  if (s.type != ScheduleType::warmup) {
    if (!p.present("total_num_steps")) p.fail("total_num_steps", "is missing; this schedule needs it (for example the train_steps of the run)");
    s.total_num_steps = p.get_int("total_num_steps", 0, 1, kMax);
  }
  if (s.type == ScheduleType::warmup_cosine) {
    s.warmup_min_ratio = non_negative(p, "warmup_min_ratio", s.warmup_min_ratio);
    s.cos_min_ratio = non_negative(p, "cos_min_ratio", s.cos_min_ratio);
    return;
  }
  s.warmup_min_lr = non_negative(p, "warmup_min_lr", s.warmup_min_lr);
  // WarmupLR defaults warmup_max_lr to the optimizer's lr; WarmupDecayLR's constructor to 0.001.
  if (p.has("warmup_max_lr") || p.is_auto("warmup_max_lr")) s.warmup_max_lr = non_negative(p, "warmup_max_lr", 0.0);
  else if (s.type == ScheduleType::warmup_decay) s.warmup_max_lr = 0.001;
}

}  // namespace

Schedule read_scheduler(const Section& top, const AutoContext& ctx) {
  Schedule s;
  if (!top.has("scheduler")) return s;
  const Section sched = top.child("scheduler", {{"type", Use::read, JsonType::string, ""}, {"params", Use::read, JsonType::object, ""}});
  s.type = schedule_type(sched);
  if (s.type == ScheduleType::none) return s;  // reported; its parameters cannot be checked without a type
  const nlohmann::json none = nlohmann::json::object();
  const Section p = sched.has("params") ? sched.child("params", schedule_rules(s.type))
                                        : Section(none, sched.path_of("params"), schedule_rules(s.type), &top.log());
  declare_autos(p, ctx);
  read_schedule_params(p, s);
  return s;
}

}  // namespace config_detail

}  // namespace zero
