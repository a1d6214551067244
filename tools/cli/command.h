// The shape every memreplay subcommand shares: its options in one struct that lives as long as the
// App (CLI11 writes into it during the parse), a run function as the callback, and the TRACE and
// --json arguments several commands take.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace memreplay::cli {

// MEMREPLAY_PLUGINS=A.so:B.so, loaded (once) when a command that uses policies runs, after the
// parse: --help, and commands without policies, work whatever it names. The same errors.
void load_environment_plugins();
// Whether the command takes --policy or --plugin (replays, lists policies).
bool uses_policies(const CLI::App& command);

template <class Options>
struct Command {
  CLI::App& app;
  Options& options;
};

// Adds subcommand `name`; `run(const Options&)` runs when it is chosen (after MEMREPLAY_PLUGINS is
// loaded, for a command that uses policies). The caller binds the flags into the returned options.
template <class Options, class Run>
Command<Options> add_command(CLI::App& parent, const std::string& name, const std::string& help, Run run) {
  auto options = std::make_shared<Options>();
  CLI::App* command = parent.add_subcommand(name, help);
  command->callback([options, run, command] {
    if (uses_policies(*command)) load_environment_plugins();
    run(*options);
  });
  return {*command, *options};
}

// TRACE: a required, existing trace file (.mrt), or anything `import` reads, through
// open_trace_input. `capacity`: where the command's --capacity lands, for the import of a snapshot;
// --capacity must be added before TRACE (CLI11 runs the callbacks in that order).
void add_trace_argument(CLI::App& command, std::string& trace, const std::optional<uint64_t>* capacity = nullptr);
// Every trace a command reads comes through here: opened (a snapshot is imported, under `capacity`
// when given, and readable under its own path from then on: results/open_trace.h) and protected
// from being overwritten by the command's outputs (base/output_file.h).
void open_trace_input(const std::string& path, std::optional<uint64_t> capacity = std::nullopt);
// --plugin PATH.so (repeatable): loads a policy plugin (policies/plugin/) when parsed; a plugin
// that cannot be used is an InputError (exit 2) naming the file.
void add_plugin_option(CLI::App& command);
// --json [FILE|-], the one convention of every command: `--json` alone or `--json -` writes JSON to
// stdout (and nothing else there), `--json FILE.json` or `--json=FILE` to a file. `what` says what.
void add_json_option(CLI::App& command, std::string& json, const std::string& what);

// A command that reads one TRACE and can write its result as --json: Options has `trace` and
// `json`; `json_what` names that result in --help.
template <class Options, class Run>
Command<Options> add_trace_command(CLI::App& parent, const std::string& name, const std::string& help, Run run,
                                   const std::string& json_what) {
  auto command = add_command<Options>(parent, name, help, run);
  add_trace_argument(command.app, command.options.trace);
  add_json_option(command.app, command.options.json, json_what);
  return command;
}

// Rewrites a bare `--json` (last, or followed by an option or by an argument that is neither "-"
// nor a *.json name) into `--json=-`, so CLI11 does not take the next argument as its FILE.
std::vector<std::string> normalize_json_arguments(int argc, char** argv);

}  // namespace memreplay::cli
