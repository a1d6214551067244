#include "tools/cli/command.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "base/output_file.h"
#include "policies/plugin/plugin_loader.h"
#include "proto/input_error.h"
#include "results/open_trace.h"

namespace memreplay::cli {

void open_trace_input(const std::string& path, std::optional<uint64_t> capacity) {
  // Open for the rest of the process: the conversion of a snapshot lives as long as its handle.
  static std::vector<results::OpenedTrace> opened;
  opened.push_back(results::open_trace(path, capacity));
  protect_input(path);
}

void add_trace_argument(CLI::App& command, std::string& trace, const std::optional<uint64_t>* capacity) {
  command
      .add_option("TRACE", trace,
                  "trace file (.mrt, from `memreplay import` or a recorder), or a PyTorch memory snapshot "
                  "(.pickle, .gz, .xz, .zst) or RMM log, imported first")
      ->required()
      ->check(CLI::ExistingFile)
      ->each([capacity](const std::string& path) {
        open_trace_input(path, capacity != nullptr ? *capacity : std::nullopt);
      });
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

bool uses_policies(const CLI::App& command) {
  return command.get_option_no_throw("--policy") != nullptr || command.get_option_no_throw("--plugin") != nullptr;
}

void load_environment_plugins() {
  static bool loaded = false;
  if (std::exchange(loaded, true)) return;
  try {
    load_plugins_from_environment();
  } catch (const PluginError& e) {
    throw InputError(std::string("MEMREPLAY_PLUGINS: ") + e.what());
  }
}

void add_json_option(CLI::App& command, std::string& json, const std::string& what) {
  command
      .add_option("--json", json,
                  "write " + what +
                      " as JSON: to stdout with --json or --json -, else to FILE (--json out.json "
                      "or --json=FILE)")
      ->option_text("[FILE|-]");
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
