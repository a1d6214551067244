// The CLI side of ReplayOptions (replayer/replay_options.h): the flags replay, compare and fit
// share bound straight into it, and the tables those commands print.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "replayer/metrics.h"
#include "replayer/replay_options.h"

namespace memreplay::cli {

// TRACE, --device, --capacity, --trace-device, --lenient, --keep-going, --time-operations into
// `options`, which must outlive the parse. --policy is each command's own.
void add_replay_options(CLI::App& command, ReplayOptions& options);

// Warnings for options that would silently do nothing: garbage_collection_threshold without a cap,
// per_process_memory_fraction next to --capacity (which wins), a --trace-device with no events.
void warn_before_replay(const ReplayOptions& options);
void warn_after_replay(const ReplayOptions& options, const ReplayMetrics& m);

// One metrics row as the table the replay and compare commands print.
void print_metrics_table(const std::vector<ReplayMetrics>& rows);
// The per-operation latencies of a --time-operations replay; nothing without them.
void print_latency_table(const ReplayMetrics& m);

}  // namespace memreplay::cli
