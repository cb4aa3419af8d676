#include "model/gpt_hf_names.h"

#include <map>

#include "common/error.h"

namespace zero {

HfTensor gpt2_tensor(const std::string& name) {
  static const std::map<std::string, HfTensor> kTop = {
      {"wte", {"transformer.wte.weight", false}}, {"wpe", {"transformer.wpe.weight", false}},
      {"lnf.w", {"transformer.ln_f.weight", false}}, {"lnf.b", {"transformer.ln_f.bias", false}}};
  static const std::map<std::string, HfTensor> kBlock = {
      {"ln1.w", {"ln_1.weight", false}},        {"ln1.b", {"ln_1.bias", false}},
      {"attn.w_qkv", {"attn.c_attn.weight", true}}, {"attn.b_qkv", {"attn.c_attn.bias", false}},
      {"attn.w_proj", {"attn.c_proj.weight", true}}, {"attn.b_proj", {"attn.c_proj.bias", false}},
      {"ln2.w", {"ln_2.weight", false}},        {"ln2.b", {"ln_2.bias", false}},
      {"mlp.w_fc", {"mlp.c_fc.weight", true}},  {"mlp.b_fc", {"mlp.c_fc.bias", false}},
      {"mlp.w_proj", {"mlp.c_proj.weight", true}}, {"mlp.b_proj", {"mlp.c_proj.bias", false}}};
  if (auto it = kTop.find(name); it != kTop.end()) return it->second;
  // "h.<layer>.<rest>"
  const std::size_t dot = name.find('.', 2);
  if (name.rfind("h.", 0) == 0 && dot != std::string::npos) {
    if (auto it = kBlock.find(name.substr(dot + 1)); it != kBlock.end()) {
      return {"transformer." + name.substr(0, dot) + "." + it->second.name, it->second.transpose};
    }
  }
  throw ConfigError(cat("[export] parameter '", name, "' is not one of zero's GPT parameters: only GPT checkpoints export to GPT-2 names"));
}

}  // namespace zero
