// The memreplay subcommands. Each add_*_command registers one CLI11 subcommand whose callback
// does the work; errors escape as InputError (exit status 2) and are printed by main().
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace memreplay::cli {

// Every subcommand, in the order `memreplay --help` lists them; tools/cli/cmd_NAME.cpp defines
// add_NAME_command. One list: main() adds them all from it.
#define MEMREPLAY_SUBCOMMANDS(X) \
  X(record)                      \
  X(import)                      \
  X(info)                        \
  X(validate)                    \
  X(replay) X(compare) X(fit) X(check) X(advise) X(export) X(report) X(bound) X(sweep) X(sweep_summary) X(policies)

#define MEMREPLAY_DECLARE_SUBCOMMAND(name) void add_##name##_command(CLI::App& app);
MEMREPLAY_SUBCOMMANDS(MEMREPLAY_DECLARE_SUBCOMMAND)
#undef MEMREPLAY_DECLARE_SUBCOMMAND

// Set by a command that found the input bad in a way it reported itself (validate).
inline int command_exit_status = 0;

// Called by main() with CLI11's message when the command line does not parse (exit 2): a command
// whose reports are written on every exit (check) writes the error into them.
inline std::vector<std::function<void(const std::string&)>> parse_error_reporters;

}  // namespace memreplay::cli
