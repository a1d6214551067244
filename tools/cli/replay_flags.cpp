#include "tools/cli/replay_flags.h"

#include <cstdio>
#include <iostream>
#include <set>

#include "base/units.h"
#include "replayer/replay_runner.h"
#include "tools/cli/command.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {

void add_replay_flags(CLI::App& command, ReplayOptions& options) {
  // Before TRACE: a snapshot is imported under it (add_trace_argument).
  command.add_option_function<std::string>(
      "--capacity", [&options](const std::string& text) { options.capacity = parse_bytes(text, "--capacity"); },
      "per-process memory cap, as set_per_process_memory_fraction sets it "
      "(e.g. 8GiB, 80GB, 1073741824); a device malloc over it fails. Without it, the cap the trace recorded "
      "(memreplay.torch, import --capacity), if any");
  add_trace_argument(command, options.trace_path, &options.capacity);
  add_plugin_option(command);
  command.add_option("--device", options.device_spec,
                     "where to replay: sim (simulated GPU, default) or cuda[:N] (a real GPU)");
  command.add_option("--trace-device", options.trace_device, "which recorded device's events to replay (default 0)");
  command.add_flag("--lenient", options.lenient,
                   "count and skip events inconsistent with the live state instead of failing");
  command.add_flag("--keep-going", options.continue_after_oom, "do not stop at the first OOM; count them all");
  command.add_flag("--time-operations", options.time_operations,
                   "time every allocate/free: p50/p90/p99/max, served from cache vs needing a device call");
}

void add_policy_list_flags(CLI::App& command, ReplayOptions& replay, std::vector<std::string>& policies,
                           const std::string& policy_help, std::string& json, const std::string& json_what) {
  add_replay_flags(command, replay);
  command.add_option("--policy", policies, policy_help);
  add_json_option(command, json, json_what);
}

void add_max_call_ratio_flag(CLI::App& command, double& ratio, const std::string& reference) {
  char default_ratio[32];
  std::snprintf(default_ratio, sizeof default_ratio, "%g", ratio);
  command
      .add_option(
          "--max-call-ratio", ratio,
          "the star's limit on device calls, as a multiple of " + reference + " (default " + default_ratio + ")")
      ->check(CLI::PositiveNumber);
}

namespace {

// One process runs one command: each warning is said once in it.
void warn_once(const std::string& message) {
  static std::set<std::string> said;
  if (said.insert(message).second) warn(message);
}

}  // namespace

void warn_torch_version(const std::string& trace, const std::string& policy_spec) {
  if (const auto warning = torch_version_warning(trace, policy_spec)) warn_once(*warning);
}

ReplayOptions with_recorded_capacity(ReplayOptions options) {
  if (const auto note = use_recorded_capacity(options)) warn_once(*note);
  return options;
}

void warn_before_replay(const ReplayOptions& options) {
  for (const auto& warning : replay_warnings_before(options)) warn_once(warning);
}

void warn_after_replay(const ReplayOptions& options, const ReplayMetrics& m) {
  for (const auto& warning : replay_warnings_after(options, m)) warn(warning);
}

void print_latency_table(const ReplayMetrics& m) {
  if (!m.latency) return;
  const auto row = [](const char* name, const LatencySummary& s) {
    std::printf("  %-22s %10llu %8llu %8llu %8llu %10llu\n", name, static_cast<unsigned long long>(s.count),
                static_cast<unsigned long long>(s.p50_ns), static_cast<unsigned long long>(s.p90_ns),
                static_cast<unsigned long long>(s.p99_ns), static_cast<unsigned long long>(s.max_ns));
  };
  std::printf("%s on %s: per-operation latency (ns); %.4f s inside device calls\n", m.policy.c_str(), m.device.c_str(),
              m.device_call_seconds);
  std::printf("  %-22s %10s %8s %8s %8s %10s\n", "operation", "count", "p50", "p90", "p99", "max");
  row("allocate, from cache", m.latency->allocate_cached);
  row("allocate, device call", m.latency->allocate_device_call);
  row("free, to cache", m.latency->free_cached);
  row("free, device call", m.latency->free_device_call);
}

}  // namespace memreplay::cli
