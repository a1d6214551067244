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
  std::unique_ptr<Policy> policy = info->factory(options, device);
  if (!info->keeps_pools_apart)
    policy->serve_private_pools_apart([factory = info->factory, options = std::string(options)](
                                          Device& pool_device) { return factory(options, pool_device); },
                                      device);
  return policy;
}

}  // namespace memreplay
