// The one table of policies: name -> factory + one-line description + the option sets its
// contract tests cover. The CLI (--policy, `memreplay policies`), the contract suite
// (tests/policy_contract_test.cpp) and the benchmarks all iterate it. Policies register themselves
// from their own .cpp with MEMREPLAY_REGISTER_POLICY; nothing else lists them.
//
// The registry lives in libmemreplay_policies.so (a static archive in portable builds), so that a
// dlopen'ed plugin linked against that library registers into this one table.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "policies/detail/named_registry.h"
#include "policies/policy.h"

namespace memreplay {

// A bad --policy spec: unknown name, or options that don't parse. what() is one line for the user.
class PolicySpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Builds a policy on a device from the option string after the first ':' of the spec
// (e.g. "expandable_segments:True,max_split_size_mb:64"). Throws PolicySpecError.
using PolicyFactory = std::function<std::unique_ptr<Policy>(std::string_view options, Device& device)>;

struct PolicyInfo {
  std::string name;
  std::string description;
  std::string options_help;  // what the options are, one line each
  PolicyFactory factory;
  // Option strings (after "NAME:") the contract suite replays this policy with; "" = defaults.
  std::vector<std::string> contract_option_sets = {""};
  // After every block is freed, empty_cache() gives everything back to the device (the contract
  // suite checks reserved == 0 then).
  bool releases_on_empty_cache = true;
  // The PyTorch release ("2.11") whose allocator this policy models; empty for policies that model
  // none. Trace commands warn when a trace's torch version differs (policies/torch_version.h).
  std::string models_torch_version;
  // What the policy takes from the device at its first request when it takes a fixed share of it
  // rather than what the trace needs ("" for none): its reserved peak is then that share of the
  // (simulated) device's memory or of the --capacity, which every table names next to it.
  std::string reserves_up_front;
  // Its decisions depend on whether a private pool's allocation was made under a CUDA graph
  // capture (allocate_in_pool's Capture): a replay warns where the trace cannot say.
  bool decides_by_capture = false;
  // It keeps each private pool's memory apart itself (allocate_in_pool, release_pool), as
  // PyTorch's allocator does. Otherwise create() gives it an instance of itself per private pool
  // (Policy::serve_private_pools_apart): a CUDA graph replays the addresses it captured, so
  // what its capture freed is still its own.
  bool keeps_pools_apart = false;
  // The shared library it came from (--plugin), empty for a policy built into memreplay.
  std::string plugin;
};

class PolicyRegistry {
 public:
  static PolicyRegistry& instance();
  // Throws detail::RegistrationError for a name that is already registered.
  bool add(PolicyInfo info) { return table_.add(std::move(info)); }
  const std::vector<PolicyInfo>& policies() const { return table_.entries(); }
  const PolicyInfo* find(std::string_view name) const { return table_.find(name); }
  // "pytorch:expandable_segments:True" -> the pytorch policy with those options.
  // Throws PolicySpecError naming the valid policies when the name is unknown.
  std::unique_ptr<Policy> create(std::string_view spec, Device& device) const;

 private:
  detail::NamedRegistry<PolicyInfo> table_{"policy"};
};

// MEMREPLAY_REGISTER_POLICY(ident, .name = "...", .description = "...", .factory = ...)
#define MEMREPLAY_REGISTER_POLICY(ident, ...) \
  MEMREPLAY_REGISTER_IN(::memreplay::PolicyRegistry, policy_##ident, __VA_ARGS__)

}  // namespace memreplay
