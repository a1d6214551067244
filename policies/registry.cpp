#include "policies/registry.h"

namespace memreplay {

PolicyRegistry& PolicyRegistry::instance() {
  static PolicyRegistry registry;
  return registry;
}

bool PolicyRegistry::add(PolicyInfo info) {
  policies_.push_back(std::move(info));
  return true;
}

const PolicyInfo* PolicyRegistry::find(std::string_view name) const {
  for (const auto& p : policies_)
    if (p.name == name) return &p;
  return nullptr;
}

std::unique_ptr<Policy> PolicyRegistry::create(std::string_view spec, Device& device) const {
  const auto colon = spec.find(':');
  const auto name = spec.substr(0, colon);
  const auto options = colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  const PolicyInfo* info = find(name);
  if (info == nullptr) {
    std::string valid;
    for (const auto& p : policies_) valid += (valid.empty() ? "" : ", ") + p.name;
    throw PolicySpecError("unknown policy '" + std::string(name) + "' (valid: " + valid + ")");
  }
  return info->factory(options, device);
}

}  // namespace memreplay
