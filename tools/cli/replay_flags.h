// The CLI side of ReplayOptions (replayer/replay_options.h): the flags replay, compare and fit
// share bound straight into it, and the tables those commands print.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "proto/trace.pb.h"
#include "replayer/metrics.h"
#include "replayer/replay_options.h"

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

// A trace without its footer (cut off mid-write) is refused unless `allowed`: an InputError naming
// the trace, why it is incomplete and `consequence` (what is not done, and the flag that does it).
void refuse_incomplete_trace(const std::string& trace, bool allowed, const std::string& consequence);

// Warnings for options that would silently do nothing: garbage_collection_threshold without a cap,
// per_process_memory_fraction next to --capacity (which wins), a --trace-device with no events;
// and warn_torch_version's.
void warn_before_replay(const ReplayOptions& options);
// The one warning of every trace command (replay, compare, fit, advise, check, report) when the
// trace's torch version (its header's setting torch_version) is another major.minor than the one
// `policy_spec` models (torch_version_mismatch, policies/torch_version.h). Each message is printed
// once per command, however many replays of the trace it runs. A trace that cannot be read says
// nothing here: the replay reports it.
void warn_torch_version(const std::string& trace, const proto::TraceHeader& header, const std::string& policy_spec);
void warn_torch_version(const std::string& trace, const std::string& policy_spec);
void warn_after_replay(const ReplayOptions& options, const ReplayMetrics& m);

// The per-operation latencies of a --time-operations replay; nothing without them.
void print_latency_table(const ReplayMetrics& m);

}  // namespace memreplay::cli
