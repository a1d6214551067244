#include "results/fit_result.h"

#include <algorithm>

#include "proto/schema_versions.h"
#include "proto/trace_reader.h"

namespace memreplay::results {

nlohmann::json oom_json(const ReplayMetrics& m, const std::string& trace) {
  if (!m.oom_at_event) return nullptr;
  nlohmann::json stack = nlohmann::json::array();
  if (m.oom_stack != 0) {
    TraceReader reader(trace);
    for (const auto& f : reader.stack_frames(m.oom_stack))
      stack.push_back({{"filename", f.filename}, {"line", f.line}, {"name", f.name}});
  }
  return {{"replay_event", *m.oom_at_event},
          {"trace_event", *m.oom_trace_event},
          {"request_bytes", *m.oom_request_bytes},
          {"stack", stack}};
}

nlohmann::json fit_at_capacity_json(const ReplayOptions& replay, const ReplayMetrics& m) {
  const uint64_t capacity = *replay.capacity;
  return {{"policy", replay.policy_spec},
          {"complete", m.complete()},
          {"capacity", capacity},
          {"fits", !m.oom_at_event},
          {"headroom_bytes",
           m.oom_at_event ? nlohmann::json(nullptr) : nlohmann::json(capacity - std::min(capacity, m.reserved_peak))},
          {"oom", oom_json(m, replay.trace_path)},
          {"metrics", to_json(m)}};
}

nlohmann::json fit_scan_json(const ReplayOptions& replay, const FitScan& scan) {
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& p : scan.probes) probes.push_back({{"capacity", p.capacity}, {"fits", p.fits}});
  // The capacities first (what a script reads), then how they were found.
  return {{"policy", replay.policy_spec},
          {"complete", scan.uncapped.complete()},
          {"min_fit_bytes", scan.smallest_fit_bytes},
          {"fails_at_bytes", scan.fails_below_smallest_bytes},
          {"fits_above_bytes", scan.fits_above_bytes},
          {"fails_below_fits_above_bytes", scan.fails_below_above_bytes},
          {"max_fail_bytes", scan.largest_fail_bytes},
          {"monotonic", scan.monotonic},
          {"resolution_bytes", scan.resolution_bytes},
          {"replays", scan.replays},
          {"probes", probes},
          {"uncapped", to_json(scan.uncapped)}};
}

nlohmann::json fit_json(const std::vector<nlohmann::json>& results) {
  nlohmann::json out = results.size() == 1 ? results[0] : nlohmann::json{{"results", results}};
  out["schema_version"] = schema::kFit;
  return out;
}

}  // namespace memreplay::results
