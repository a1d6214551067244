#include "tools/cli/command.h"

#include "policies/plugin/plugin_loader.h"
#include "proto/input_error.h"

namespace memreplay::cli {

void add_trace_argument(CLI::App& command, std::string& trace) {
  command.add_option("TRACE", trace, "trace file (.mrt), from `memreplay import` or a recorder")
      ->required()
      ->check(CLI::ExistingFile);
}

void add_plugin_option(CLI::App& command) {
  command.add_option_function<std::vector<std::string>>(
      "--plugin",
      [](const std::vector<std::string>& paths) {
        for (const auto& path : paths) {
          try {
            load_policy_plugin(path);
          } catch (const PluginError& e) {
            throw InputError(e.what());
          }
        }
      },
      "load a policy plugin (PATH.so, the C ABI of policies/plugin/memreplay_policy_plugin.h); repeatable. "
      "MEMREPLAY_PLUGINS=A.so:B.so loads plugins too");
}

void load_environment_plugins() {
  try {
    load_plugins_from_environment();
  } catch (const PluginError& e) {
    throw InputError(std::string("MEMREPLAY_PLUGINS: ") + e.what());
  }
}

void add_json_option(CLI::App& command, std::string& json, const std::string& what) {
  command.add_option("--json", json, "write " + what + " as JSON to FILE (- for stdout)");
}

}  // namespace memreplay::cli
