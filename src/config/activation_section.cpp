// DeepSpeed's "activation_checkpointing" section. DeepSpeed's section configures
// deepspeed.checkpointing for a model that calls it; zero's GPT is that model, and it checkpoints
// every block when asked: model.checkpoint_activations (Megatron's flag name) or
// `zero train --activation-checkpointing`. Each key has DeepSpeed's meaning or is refused.
#include "common/error.h"
#include "config/reader.h"

namespace zero::config_detail {

std::vector<KeyRule> activation_checkpointing_rules() {
  const Use R = Use::read, I = Use::ignore;
  const JsonType kBool = JsonType::boolean, kAny = JsonType::any;
  return {{"partition_activations", I, kBool,
           "splits each checkpoint across the model-parallel ranks; zero is data-parallel only (a model-parallel world of 1, "
           "where DeepSpeed splits nothing either)"},
          {"cpu_checkpointing", R, kBool, ""},
          {"contiguous_memory_optimization", I, kBool, "copies checkpoints into one buffer; zero's kept inputs are one contiguous buffer already"},
          {"number_checkpoints", R, kAny, ""},
          {"synchronize_checkpoint_boundary", I, kBool,
           "synchronizes the device at each checkpoint; zero's CPU kernels are synchronous, so every boundary is already"},
          {"profile", R, kBool, ""}};
}

void read_activation_checkpointing(const Section& top, ModelSection& m) {
  if (!top.has("activation_checkpointing")) return;
  const Section s = top.child("activation_checkpointing", activation_checkpointing_rules());
  if (s.get_bool("profile", false)) {
    s.fail("profile", "= true (per-checkpoint timing) is not implemented; `zero bench train --activation-checkpointing` "
                      "measures the step time with and without checkpointing: set false");
  }
  m.checkpointing.cpu = s.get_bool("cpu_checkpointing", false);
  if (m.checkpointing.cpu && !m.checkpointing.enabled) {
    s.fail("cpu_checkpointing", "= true moves the kept block inputs to the host, but the GPT does not checkpoint: set "
                                "model.checkpoint_activations to true (or pass --activation-checkpointing)");
  }
  // DeepSpeed: how many checkpoints the forward stores, to size the contiguous buffer. zero's
  // GPT and LLaMA checkpoint every block: n_layer (num_hidden_layers) of them. false or null (DeepSpeed's "unset") are accepted.
  const int layers = m.is_llama() ? m.llama.layers : m.shape.layers;
  if (s.has("number_checkpoints")) {
    const nlohmann::json& v = s.at("number_checkpoints");
    if (v.is_number_integer()) {
      if (v.get<std::int64_t>() != layers) {
        s.fail("number_checkpoints", cat("= ", v.dump(), ", but zero's ", m.is_llama() ? "LLaMA" : "GPT", " checkpoints every block: ",
                                         m.is_llama() ? "num_hidden_layers" : "n_layer", " = ", layers,
                                         " checkpoints; set it to ", layers, " or remove it"));
      }
    } else if (!v.is_boolean() || v.get<bool>()) {
      s.fail("number_checkpoints", cat("must be an integer (the number of checkpoints), false or null, found ", describe_value(v)));
    }
  }
}

}  // namespace zero::config_detail
