#include "tools/cli/command.h"

#include <algorithm>
#include <cctype>

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
  command.add_option("--json", json,
                     "write " + what +
                         " as JSON: to stdout with --json or --json -, else to FILE (--json out.json "
                         "or --json=FILE)");
}

namespace {

bool names_json_file(const std::string& argument) {
  if (argument.size() < 5) return false;
  std::string tail = argument.substr(argument.size() - 5);
  std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return std::tolower(c); });
  return tail == ".json";
}

}  // namespace

std::vector<std::string> normalize_json_arguments(int argc, char** argv) {
  std::vector<std::string> out(argv, argv + argc);
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i] == "--") break;  // the program `record` runs owns the rest
    if (out[i] != "--json") continue;
    const bool has_value = i + 1 < out.size() && (out[i + 1] == "-" || names_json_file(out[i + 1]));
    if (!has_value) out[i] = "--json=-";
  }
  return out;
}

}  // namespace memreplay::cli
