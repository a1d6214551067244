// The CLI side of ReplayOptions (replayer/replay_options.h): the flags replay, compare and fit
// share bound straight into it, and the tables those commands print.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "replayer/metrics.h"
#include "replayer/replay_options.h"
#include "replayer/replay_runner.h"

namespace memreplay::cli {

// TRACE, --device, --capacity, --trace-device, --lenient, --keep-going, --time-operations into
// `options`, which must outlive the parse. --policy is each command's own.
void add_replay_flags(CLI::App& command, ReplayOptions& options);
// add_replay_flags, a repeatable --policy into `policies` and --json into `json`: the flags of a
// command that replays one trace under several policies (compare, report).
void add_policy_list_flags(CLI::App& command, ReplayOptions& replay, std::vector<std::string>& policies,
                           const std::string& policy_help, std::string& json, const std::string& json_what);
// --max-call-ratio into `ratio` (which holds the default): the star's limit on device calls, as a
// multiple of those of `reference` ("the current setting's").
void add_max_call_ratio_flag(CLI::App& command, double& ratio, const std::string& reference);

// `options` under the cap the trace recorded where it was given no --capacity (use_recorded_capacity,
// replayer/replay_runner.h), said once: for replay, compare, advise and report.
ReplayOptions with_recorded_capacity(ReplayOptions options);

// replay_warnings_before / replay_warnings_after (replayer/replay_runner.h), printed (warn()); those
// before, each once per command however many replays it runs (the torch release's warning of
// every trace command: replay, compare, fit, advise, report).
void warn_before_replay(const ReplayOptions& options);
// torch_version_warning (replayer/replay_runner.h) printed, once per command: what check says for
// each trace × policy before its replays.
void warn_torch_version(const std::string& trace, const std::string& policy_spec);
void warn_after_replay(const ReplayOptions& options, const ReplayMetrics& m);

// The per-operation latencies of a --time-operations replay; nothing without them.
void print_latency_table(const ReplayMetrics& m);

}  // namespace memreplay::cli
