// PluginPolicy: a policy of a plugin (memreplay_policy_plugin.h) behind the Policy interface, and
// the checks that keep a misbehaving plugin's fault from passing as a result: every block it
// returns must hold the request, fit in 2^48 bytes, overlap no live block and lie in device memory
// it holds; every device call it makes must be on memory it holds (no double free, no unmap of
// pages it did not map, nothing given back under a live block); an ERROR it reports is a
// PolicyContractError naming the policy (the replay session adds the event index). Every call into
// the plugin runs in a PluginCallScope (plugin_guard.h): a crash or exit() there is contained.
#pragma once

#include <memory>
#include <string>

#include "policies/plugin/memreplay_policy_plugin.h"
#include "policies/policy.h"

namespace memreplay {

// Builds the policy `table` describes on `device` with `options`; PolicySpecError for options
// the plugin refuses.
std::unique_ptr<Policy> make_plugin_policy(const memreplay_policy_plugin& table, std::string_view options,
                                           Device& device);

}  // namespace memreplay
