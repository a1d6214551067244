#include "replayer/metrics.h"

#include <nlohmann/json.hpp>

#include "policies/torch_version.h"
#include "proto/schema_versions.h"

namespace memreplay {
namespace {

template <typename T>
nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json latency_json(const LatencySummary& s) {
  return {{"count", s.count},   {"p50_ns", s.p50_ns}, {"p90_ns", s.p90_ns},
          {"p99_ns", s.p99_ns}, {"max_ns", s.max_ns}, {"mean_ns", s.mean_ns}};
}

nlohmann::json latency_json(const std::optional<OperationLatencies>& l) {
  if (!l) return nullptr;
  return {{"allocate",
           {{"cached", latency_json(l->allocate_cached)}, {"device_call", latency_json(l->allocate_device_call)}}},
          {"free", {{"cached", latency_json(l->free_cached)}, {"device_call", latency_json(l->free_device_call)}}}};
}

// The PyTorch release the replayed policy models ("2.11"), null for a policy that models none.
nlohmann::json torch_version_json(const std::string& policy_spec) {
  const std::string version = models_torch_version(policy_spec);
  return version.empty() ? nlohmann::json(nullptr) : nlohmann::json(version);
}

}  // namespace

nlohmann::json to_json(const DeviceCalls& c) {
  return {{"mallocs", c.mallocs}, {"frees", c.frees},           {"maps", c.maps},
          {"unmaps", c.unmaps},   {"pool_grows", c.pool_grows}, {"pool_trims", c.pool_trims}};
}

DeviceCalls device_calls_of(const DeviceCounters& c) {
  return {.mallocs = c.malloc_calls,
          .frees = c.free_calls,
          .maps = c.map_calls,
          .unmaps = c.unmap_calls,
          .pool_grows = c.pool_grow_calls,
          .pool_trims = c.pool_trim_calls};
}

uint64_t total_device_calls(const ReplayMetrics& m) { return m.device_calls.total(); }

nlohmann::json to_json(const ReplayMetrics& m) {
  nlohmann::json timeline = nlohmann::json::array();
  for (const auto& p : m.timeline) timeline.push_back({p.event, p.time_ns, p.reserved, p.allocated, p.requested});
  return {
      {"schema_version", schema::kMetrics},
      {"policy", m.policy},
      {"models_torch_version", torch_version_json(m.policy)},
      {"device", m.device},
      {"trace_device", m.trace_device},
      {"capacity", optional_json(m.capacity)},
      {"device_memory", m.device_memory},
      {"events", m.events},
      {"reserved_peak", m.reserved_peak},
      {"allocated_peak", m.allocated_peak},
      {"requested_peak", m.requested_peak},
      {"device_alloc_calls", m.device_alloc_calls},
      {"device_free_calls", m.device_free_calls},
      {"device_calls", m.device_calls.total()},
      {"device_calls_by_kind", to_json(m.device_calls)},
      {"alloc_retries", m.alloc_retries},
      {"ooms", m.ooms},
      {"oom_at_event", optional_json(m.oom_at_event)},
      {"oom_trace_event", optional_json(m.oom_trace_event)},
      {"oom_request_bytes", optional_json(m.oom_request_bytes)},
      {"preexisting_segments", m.preexisting_segments},
      {"skipped_events", m.skipped_events},
      {"first_skipped", optional_json(m.first_skipped)},
      {"replay_seconds", m.replay_seconds},
      {"device_call_seconds", m.device_call_seconds},
      {"latency", latency_json(m.latency)},
      {"peak_replay_event", optional_json(m.peak_replay_event)},
      {"peak_trace_event", optional_json(m.peak_trace_event)},
      {"fragmentation_at_peak", m.fragmentation_at_peak},
      {"fragmentation_at_peak_max", m.fragmentation_at_peak_max},
      {"free_fragmentation_at_peak", m.free_fragmentation_at_peak},
      {"largest_free_at_peak", m.largest_free_at_peak},
      {"total_free_at_peak", m.total_free_at_peak},
      {"device_counters", m.device_counters},
      {"policy_stats", m.policy_stats},
      {"timeline_columns", {"event", "time_ns", "reserved", "allocated", "requested"}},
      {"timeline", timeline},
      {"complete", m.complete()},
      {"trace_complete", m.trace_complete},
      {"stopped_at_oom", m.stopped_at_oom},
      {"incomplete", m.loss ? nlohmann::json{{"whole_events", m.loss->whole_events},
                                             {"lost_bytes", m.loss->lost_bytes},
                                             {"file_bytes", m.loss->file_bytes},
                                             {"reason", m.loss->reason}}
                            : nlohmann::json(nullptr)},
  };
}

std::optional<std::string> skipped_warning(const std::string& trace, const ReplayMetrics& m) {
  if (m.skipped_events == 0) return std::nullopt;
  return trace + ": --lenient skipped " + std::to_string(m.skipped_events) + " event" +
         (m.skipped_events == 1 ? "" : "s") +
         " inconsistent with the live state (the first: " + m.first_skipped.value_or("?") + "); the numbers leave " +
         (m.skipped_events == 1 ? "it" : "them") + " out";
}

std::optional<std::string> incomplete_warning(const std::string& trace, const ReplayMetrics& m) {
  if (m.trace_complete || !m.loss) return std::nullopt;
  const TraceLoss& l = *m.loss;
  const std::string last = l.whole_events == 0 ? "no whole event at all"
                                               : "the last whole event is event " + std::to_string(l.whole_events - 1);
  return trace + " is incomplete (cut off mid-write: no footer): the numbers cover its first " +
         std::to_string(l.whole_events) + " events only; " + last + "; " + std::to_string(l.lost_bytes) + " of its " +
         std::to_string(l.file_bytes) + " bytes after the last whole chunk were lost";
}

}  // namespace memreplay
