#include "policies/registry.h"

namespace memreplay {

PolicyRegistry& PolicyRegistry::instance() {
  static PolicyRegistry registry;
  return registry;
}

std::unique_ptr<Policy> PolicyRegistry::create(std::string_view spec, Device& device) const {
  const auto [name, options] = detail::split_spec(spec);
  const PolicyInfo* info = find(name);
  if (info == nullptr)
    throw PolicySpecError("unknown policy '" + std::string(name) + "' (valid: " + table_.names() + ")");
  return info->factory(options, device);
}

}  // namespace memreplay
