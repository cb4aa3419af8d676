#include "backends/facts.h"

#include "common/error.h"

namespace zero {

// Each backend folder's facts (backends/<name>/*_facts.cpp).
BackendFacts cpu_facts();
BackendFacts strict_facts();
BackendFacts counting_facts();
BackendFacts cuda_facts();

double BackendFacts::peak_flops(Dtype d) const {
  switch (d) {
    case Dtype::kBf16: return peak_bf16;
    case Dtype::kF16: return peak_f16;
    default: return peak_f32;
  }
}

const std::vector<BackendFacts>& backend_facts() {
  static const std::vector<BackendFacts> all{cpu_facts(), cuda_facts(), strict_facts(), counting_facts()};
  return all;
}

namespace {

// "a, b or c".
std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

}  // namespace

std::string backend_names() {
  std::vector<std::string> names;
  for (const BackendFacts& f : backend_facts()) {
    if (f.for_users) names.push_back(f.name);
  }
  return listed(names);
}

const BackendFacts& find_facts(const std::string& name, const std::string& component) {
  for (const BackendFacts& f : backend_facts()) {
    if (f.name == name) return f;
  }
  std::vector<std::string> names;
  for (const BackendFacts& f : backend_facts()) names.push_back(f.for_users ? f.name : cat(f.name, " (", f.role, ")"));
  throw ConfigError(cat(component, " unknown device '", name, "': use ", listed(names)));
}

bool is_user_backend(const std::string& name) {
  for (const BackendFacts& f : backend_facts()) {
    if (f.name == name) return f.for_users;
  }
  return false;
}

const std::string& default_device() { return backend_facts().front().name; }

const std::string& planner_device() {
  static const std::string name = counting_facts().name;
  return name;
}

}  // namespace zero
