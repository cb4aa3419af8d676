// DeepSpeed's "optimizer" section: Adam/AdamW (DeepSpeed's FusedAdam and CPU Adam) and Lamb
// (its FusedLamb); every other optimizer DeepSpeed has is refused with its reason, its parameters
// reported in the same run.
#include <cctype>
#include <limits>
#include <set>

#include "common/error.h"
#include "common/number_text.h"
#include "config/reader.h"

namespace zero::config_detail {
namespace {

constexpr JsonType kBool = JsonType::boolean, kNum = JsonType::number, kStr = JsonType::string, kObj = JsonType::object,
                   kArr = JsonType::array;

}  // namespace

namespace {

// The parameters Adam and Lamb share, then an optimizer's own; "auto" where the Trainer fills it in.
std::vector<KeyRule> optimizer_param_rules(const std::vector<KeyRule>& own) {
  const Use R = Use::read;
  std::vector<KeyRule> rules = {{"lr", R, kNum, ""}, {"betas", R, kArr, ""}, {"eps", R, kNum, ""}, {"weight_decay", R, kNum, ""},
                                {"bias_correction", R, kBool, ""}};
  rules.insert(rules.end(), own.begin(), own.end());
  return allow_auto(rules, {"lr", "betas", "eps", "weight_decay"});
}

}  // namespace

std::vector<KeyRule> adam_param_rules() {
  const Use R = Use::read, I = Use::ignore, U = Use::unsupported;
  return optimizer_param_rules({
      {"adam_w_mode", R, kBool, ""},
      {"torch_adam", R, kBool, ""},
      {"set_grad_none", I, kBool, "whether DeepSpeed's FusedAdam frees gradients with None or zeros"},
      {"fp32_optimizer_states", I, kBool, "DeepSpeed's CPU Adam keeps its moments in fp32 or in the parameters' type; zero's are fp32"},
      {"amsgrad", U, kBool, "the AMSGrad variant of Adam", false},
      {"max_grad_norm", U, kNum, "DeepSpeed refuses it too (ValueError since v0.3.0: \"not supported as an optimizer parameter\"); "
                                 "move the value to the top-level \"gradient_clipping\""},
  });
}

// DeepSpeed's "Lamb" (its FusedLamb): Adam's lr, betas, eps, weight_decay and bias_correction,
// and its own trust-ratio clamp and eps placement. FusedLamb's max_grad_norm needs gradient norms
// DeepSpeed's engine never passes it, so only its no-op 0 is accepted.
std::vector<KeyRule> lamb_param_rules() {
  const Use R = Use::read, U = Use::unsupported;
  return optimizer_param_rules({
      {"max_coeff", R, kNum, ""},
      {"min_coeff", R, kNum, ""},
      {"eps_inside_sqrt", R, kBool, ""},
      {"amsgrad", U, kBool, "the AMSGrad variant, which FusedLamb refuses too", false},
      {"max_grad_norm", U, kNum, "FusedLamb's own clipping, which DeepSpeed's engine cannot feed; move the value to the "
                                 "top-level \"gradient_clipping\"", 0.0},
  });
}

// DeepSpeed's "OneBitAdam" (its OnebitAdam) and "ZeroOneAdam": Adam's lr, betas, eps and
// weight_decay, and their schedules (freeze_step; var_freeze_step, var_update_scaler,
// local_step_scaler, local_step_clipper); the rest they take and never read, or read to pick
// their communication library.
std::vector<KeyRule> onebit_adam_param_rules(bool zero_one) {
  const Use R = Use::read, I = Use::ignore, U = Use::unsupported;
  const JsonType kInt = JsonType::integer;
  std::vector<KeyRule> schedule = {{"freeze_step", R, kInt, ""}};
  if (zero_one) {
    schedule = {{"var_freeze_step", R, kInt, ""}, {"var_update_scaler", R, kInt, ""}, {"local_step_scaler", R, kInt, ""},
                {"local_step_clipper", R, kInt, ""}};
  }
  std::vector<KeyRule> rules = optimizer_param_rules({
      {"comm_backend_name", R, kStr, ""},
      {"cuda_aware", I, kBool, "whether DeepSpeed's MPI backend hands GPU memory to MPI; zero compresses in host memory, so it means nothing here"},
      {"eps_inside_sqrt", I, kBool, "DeepSpeed's OnebitAdam and ZeroOneAdam keep the flag and never read it: eps is added outside the square root"},
      {"max_grad_norm", I, kNum, "DeepSpeed's OnebitAdam and ZeroOneAdam keep it and never read it; clipping is the top-level \"gradient_clipping\""},
      {"amsgrad", U, kBool, "the AMSGrad variant, which DeepSpeed's OnebitAdam and ZeroOneAdam refuse too", false},
  });
  rules.insert(rules.end(), schedule.begin(), schedule.end());
  return rules;
}

namespace {

// The schedule keys and comm_backend_name. DeepSpeed picks its compressed all-reduce's library by name
// ("nccl" default, "mpi", "hccl", "compressed"); zero's runs on the run's own communicator.
void read_onebit(const Section& p, EngineSettings& c) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (c.optimizer == OptimizerKind::kOneBitAdam) {
    c.onebit.freeze_step = p.get_int("freeze_step", c.onebit.freeze_step, 0, kMax);
  } else {
    ZeroOneAdamConfig& z = c.zero_one;
    z.var_freeze_step = p.get_int("var_freeze_step", z.var_freeze_step, 0, kMax);
    z.var_update_scaler = p.get_int("var_update_scaler", z.var_update_scaler, 1, kMax);
    z.local_step_scaler = p.get_int("local_step_scaler", z.local_step_scaler, 1, kMax);
    z.local_step_clipper = p.get_int("local_step_clipper", z.local_step_clipper, 1, kMax);
  }
  const std::string backend = p.get_string("comm_backend_name", "nccl");
  if (backend != "nccl" && backend != "mpi" && backend != "hccl" && backend != "compressed") {
    p.fail("comm_backend_name", cat("is \"", backend, "\"; DeepSpeed's names are \"nccl\", \"mpi\", \"hccl\" and \"compressed\" (zero's "
                                    "compressed all-reduce runs on the run's own communicator whichever is named)"));
  }
}

void read_lamb(const Section& p, LambConfig& lamb) {
  lamb.max_coeff = p.get_float("max_coeff", lamb.max_coeff);
  lamb.min_coeff = p.get_float("min_coeff", lamb.min_coeff);
  lamb.eps_inside_sqrt = p.get_bool("eps_inside_sqrt", lamb.eps_inside_sqrt);
  if (!(lamb.max_coeff > 0.0f)) p.fail("max_coeff", cat("is ", lamb.max_coeff, "; the trust ratio's upper clamp must be > 0"));
  if (!(lamb.min_coeff >= 0.0f && lamb.min_coeff <= lamb.max_coeff)) {
    p.fail("min_coeff", cat("is ", lamb.min_coeff, "; the trust ratio's lower clamp must be in [0, max_coeff = ", lamb.max_coeff, "]"));
  }
}

void read_betas(const Section& params, AdamConfig& adam) {
  params.set_auto("betas", {adam.beta1, adam.beta2}, "zero's default, as if the key were absent");
  if (!params.has("betas") && !params.is_auto("betas")) return;
  const nlohmann::json& b = params.has("betas") ? params.at("betas") : params.resolve_auto("betas", nullptr);
  if (b.size() != 2 || !b[0].is_number() || !b[1].is_number()) {
    params.fail("betas", cat("must be two numbers [beta1, beta2], found ", describe_value(b)));
    return;
  }
  for (int i = 0; i < 2; ++i) {
    const double v = b[i].get<double>();
    if (!(v >= 0.0 && v < 1.0)) params.fail("betas", cat("[", i, "] is ", v, "; each beta must be in [0, 1)"));
    else if (static_cast<float>(v) >= 1.0f) {  // the optimizer keeps betas in f32: 1 - 1e-10 rounds to 1
      params.fail("betas", cat("[", i, "] is ", shortest_decimal(v), ", which is 1 as a 32-bit float (the optimizer's precision); each beta must be ",
                               "at most 0.99999994, the largest float below 1"));
    }
  }
  if (params.is_bad("betas")) return;
  adam.beta1 = b[0].get<float>();
  adam.beta2 = b[1].get<float>();
}

// Why an optimizer DeepSpeed has is refused here, by DeepSpeed's lower-case name.
std::string refused_optimizer(const std::string& low) {
  if (low == "onebitlamb") {
    return "1-bit Lamb's compressed momentum with per-layer scaling is not implemented (zero has 1-bit Adam, \"OneBitAdam\", "
           "0/1 Adam, \"ZeroOneAdam\", and Lamb)";
  }
  return "zero implements Adam, AdamW, Lamb, OneBitAdam and ZeroOneAdam";
}

// The optimizer's name, checked ("" when refused; *name: as written). DeepSpeed lower-cases it.
std::string optimizer_type(const Section& opt, std::string* written) {
  if (!opt.present("type")) opt.fail("type", "is missing; set \"AdamW\", \"Adam\", \"Lamb\", \"OneBitAdam\" or \"ZeroOneAdam\"");
  if (!opt.has("type")) return "";
  const std::string name = *written = opt.get_string("type", "");
  std::string low = name;
  for (char& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (low == "adam") return "Adam";
  if (low == "adamw") return "AdamW";
  if (low == "lamb") return "Lamb";
  if (low == "onebitadam") return "OneBitAdam";
  if (low == "zerooneadam") return "ZeroOneAdam";
  static const std::set<std::string> known = {"onebitlamb", "adagrad", "lion",
                                              "muon", "muadam", "muadamw", "musgd", "sgd"};
  if (known.count(low)) {
    opt.fail("type", cat("\"", name, "\" is known but not supported yet: ", refused_optimizer(low), "; use \"AdamW\", \"Adam\", \"Lamb\", \"OneBitAdam\" or \"ZeroOneAdam\""));
  } else {
    opt.fail("type", cat("\"", name, "\" is not an optimizer zero knows; did you mean \"", nearest(name, {"Adam", "AdamW", "Lamb", "OneBitAdam", "ZeroOneAdam"}),
                         "\"? (zero implements Adam, AdamW, Lamb, OneBitAdam and ZeroOneAdam)"));
  }
  return "";
}

// torch_adam selects torch.optim.Adam/AdamW: the same arithmetic as DeepSpeed's fused Adam (and
// zero's), but it takes no bias_correction, so DeepSpeed fails with a TypeError on both together.
void read_adam_variant(const Section& p, AdamConfig& adam) {
  const bool torch_adam = p.get_bool("torch_adam", false);
  adam.bias_correction = p.get_bool("bias_correction", true);
  if (torch_adam && p.has("bias_correction")) {
    p.fail("bias_correction", "is not a parameter of PyTorch's Adam, which torch_adam: true selects (DeepSpeed fails with a "
                              "TypeError on it too); remove bias_correction or torch_adam");
  }
}

}  // namespace

// "optimizer": {"type", "params"}. Defaults are DeepSpeed's FusedAdam's: lr 1e-3, betas
// (0.9, 0.999), eps 1e-8, weight_decay 0. For type Adam DeepSpeed's adam_w_mode defaults to true,
// so "Adam" means decoupled decay (AdamW) unless adam_w_mode is false; for type AdamW it is
// always decoupled, and adam_w_mode: false (which DeepSpeed quietly overrides) is an error.
// With a refused type the parameters are still checked against Adam's, so that switching the
// type to AdamW shows every parameter to remove at once.
void read_optimizer(const Section& top, EngineSettings& c, std::string& type_name) {
  if (!top.has("optimizer")) return;  // no section: AdamW with the defaults
  const Section opt = top.child("optimizer", {{"type", Use::read, kStr, ""}, {"params", Use::read, kObj, ""},
                                              {"legacy_fusion", Use::ignore, kBool, "the fused fp16 optimizer's mode; zero trains in fp32"}});
  std::string written;
  const std::string type = optimizer_type(opt, &written);
  type_name = type.empty() ? type_name : type;
  c.optimizer = type_name == "Lamb"          ? OptimizerKind::kLamb
                : type_name == "OneBitAdam"  ? OptimizerKind::kOneBitAdam
                : type_name == "ZeroOneAdam" ? OptimizerKind::kZeroOneAdam
                                             : OptimizerKind::kAdam;
  c.adam.decoupled = true;
  if (!opt.has("params")) return;
  const std::string hint = type.empty() && !written.empty()
                               ? cat(" (a parameter of ", written, " that Adam and AdamW do not have: remove it when you switch the type)")
                               : std::string();
  const bool lamb = type == "Lamb", onebit = compresses_all_reduce(c.optimizer);
  const Section p = opt.child("params", lamb ? lamb_param_rules() : onebit ? onebit_adam_param_rules(type == "ZeroOneAdam") : adam_param_rules(), hint);
  c.adam.lr = p.get_float("lr", c.adam.lr);
  c.adam.eps = p.get_float("eps", c.adam.eps);
  c.adam.weight_decay = p.get_float("weight_decay", c.adam.weight_decay);
  read_betas(p, c.adam);
  if (lamb) {
    c.adam.bias_correction = p.get_bool("bias_correction", true);
    read_lamb(p, c.lamb);
  } else if (onebit) {  // DeepSpeed's OnebitAdam and ZeroOneAdam keep bias_correction and never read it
    p.get_bool("bias_correction", true);
    c.adam.bias_correction = false;
    read_onebit(p, c);
  } else {
    read_adam_variant(p, c.adam);
  }
  if (c.adam.lr < 0) p.fail("lr", cat("is ", c.adam.lr, "; the learning rate must be >= 0"));
  if (c.adam.eps < 0) p.fail("eps", cat("is ", c.adam.eps, "; eps must be >= 0"));
  if (c.adam.weight_decay < 0) p.fail("weight_decay", cat("is ", c.adam.weight_decay, "; weight_decay must be >= 0"));
  if (lamb || onebit) return;  // Lamb's decay is in its update (optim/lamb.h), not Adam's L2 or decoupled decay
  const bool w_mode = p.get_bool("adam_w_mode", true);
  if (type == "AdamW" && !w_mode) {
    p.fail("adam_w_mode", "is false, but type \"AdamW\" always uses decoupled weight decay (DeepSpeed ignores this flag for AdamW); "
                          "for L2 decay added to the gradient use type \"Adam\" with adam_w_mode false");
  }
  c.adam.decoupled = w_mode;
}

}  // namespace zero::config_detail
