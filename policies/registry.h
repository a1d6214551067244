// The one table of policies: name -> factory + one-line description. The CLI (--policy,
// --list-policies), the contract tests and the benchmarks all iterate it. Policies register
// themselves from their own .cpp with MEMREPLAY_REGISTER_POLICY; nothing else lists them.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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
};

class PolicyRegistry {
 public:
  static PolicyRegistry& instance();
  bool add(PolicyInfo info);
  const std::vector<PolicyInfo>& policies() const { return policies_; }
  const PolicyInfo* find(std::string_view name) const;
  // "pytorch:expandable_segments:True" -> the pytorch policy with those options.
  // Throws PolicySpecError naming the valid policies when the name is unknown.
  std::unique_ptr<Policy> create(std::string_view spec, Device& device) const;

 private:
  std::vector<PolicyInfo> policies_;
};

#define MEMREPLAY_REGISTER_POLICY(ident, ...)                        \
  [[maybe_unused]] static const bool memreplay_policy_registered_##ident = \
      ::memreplay::PolicyRegistry::instance().add(::memreplay::PolicyInfo{__VA_ARGS__})

}  // namespace memreplay
