// Loading policy plugins (memreplay_policy_plugin.h): dlopen, check the table, register the policy
// under its name. Used by the CLI's --plugin PATH and the MEMREPLAY_PLUGINS variable.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace memreplay {

// A plugin that cannot be used: what() is one line naming the file and why (it cannot be opened,
// it lacks the entry symbol, its ABI version differs, its table is incomplete, its name is taken).
class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Loads `path` and registers its policy; returns the policy's name. A path loaded before is not
// loaded again (its name is returned). The library stays loaded for the process's lifetime.
std::string load_policy_plugin(const std::string& path);

// The paths of MEMREPLAY_PLUGINS (separated by ':'), loaded in order; nothing when it is unset.
std::vector<std::string> load_plugins_from_environment();

}  // namespace memreplay
