#include "tools/cli/replay_flags.h"

#include <cstdio>
#include <iostream>
#include <optional>
#include <set>

#include "base/units.h"
#include "policies/torch_version.h"
#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "tools/cli/command.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {

void add_replay_flags(CLI::App& command, ReplayOptions& options) {
  add_trace_argument(command, options.trace_path);
  add_plugin_option(command);
  command.add_option("--device", options.device_spec,
                     "where to replay: sim (simulated GPU, default) or cuda[:N] (a real GPU)");
  command.add_option_function<std::string>(
      "--capacity", [&options](const std::string& text) { options.capacity = parse_bytes(text, "--capacity"); },
      "per-process memory cap, as set_per_process_memory_fraction sets it "
      "(e.g. 8GiB, 80GB, 1073741824); a device malloc over it fails");
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

void refuse_incomplete_trace(const std::string& trace, bool allowed, const std::string& consequence) {
  if (allowed) return;
  TraceReader reader(trace);
  if (!reader.complete())
    throw InputError(trace + ": the trace is incomplete (" + reader.truncation_note().value_or("no footer") + "); " +
                     consequence);
}

void warn_torch_version(const std::string& trace, const proto::TraceHeader& header, const std::string& policy_spec) {
  static std::set<std::string> said;  // one process runs one command
  const auto& settings = header.allocator_settings();
  const auto recorded = settings.find(std::string(kTorchVersionSetting));
  if (recorded == settings.end()) return;
  if (const auto message = torch_version_mismatch(recorded->second, policy_spec))
    if (said.insert(trace + '\n' + *message).second) warn(trace + ": " + *message);
}

void warn_torch_version(const std::string& trace, const std::string& policy_spec) {
  std::optional<TraceReader> reader;
  try {
    reader.emplace(trace);
  } catch (const std::exception&) {
    return;
  }
  warn_torch_version(trace, reader->header(), policy_spec);
}

void warn_before_replay(const ReplayOptions& options) {
  warn_torch_version(options.trace_path, options.policy_spec);
  const std::string& spec = options.policy_spec;
  const bool fraction = spec.find("per_process_memory_fraction") != std::string::npos;
  if (spec.find("garbage_collection_threshold") != std::string::npos && !options.capacity && !fraction)
    warn(spec +
         ": garbage_collection_threshold acts only under a per-process limit; without --capacity (or "
         "per_process_memory_fraction) it changes nothing");
  if (fraction && options.capacity)
    warn(spec + ": per_process_memory_fraction is ignored when --capacity is given (the capacity is the limit)");
}

void warn_after_replay(const ReplayOptions& options, const ReplayMetrics& m) {
  if (m.events == 0 && !m.oom_at_event)  // (an OOM in the starting state stops before any event)
    warn(options.trace_path + ": no alloc or free events on trace device " + std::to_string(options.trace_device) +
         " (see `memreplay info` for the devices it has); every number below is 0");
  if (const auto skipped = skipped_warning(options.trace_path, m)) warn(*skipped);
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
