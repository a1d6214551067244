// Options shared by replay, compare and fit: trace, device, capacity, trace device, --lenient.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "replayer/replay_runner.h"

namespace memreplay::cli {

struct CommonReplayOptions {
  std::string trace;
  std::string device = "sim";
  std::string capacity;  // bytes with a unit, empty = no cap
  uint32_t trace_device = 0;
  bool lenient = false;
  bool keep_going = false;
  bool time_operations = false;

  void add_to(CLI::App& command);
  ReplayRequest request_for(const std::string& policy_spec) const;
};

// One metrics row as the table the replay and compare commands print.
void print_metrics_table(const std::vector<ReplayMetrics>& rows);
// The per-operation latencies of a --time-operations replay; nothing without them.
void print_latency_table(const ReplayMetrics& m);

}  // namespace memreplay::cli
