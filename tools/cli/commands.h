// The memreplay subcommands. Each add_*_command registers one CLI11 subcommand whose callback
// does the work; errors escape as InputError (exit status 2) and are printed by main().
#pragma once

#include <CLI/CLI.hpp>

namespace memreplay::cli {

void add_import_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_bound_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_policies_command(CLI::App& app);
void add_record_command(CLI::App& app);
void add_check_command(CLI::App& app);
void add_advise_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_export_command(CLI::App& app);

// Set by a command that found the input bad in a way it reported itself (validate).
inline int command_exit_status = 0;

}  // namespace memreplay::cli
