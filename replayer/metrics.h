// ReplayMetrics: what one replay measured, and its JSON form. The JSON keys are a documented,
// stable schema (README "Metrics"); bump kMetricsSchemaVersion on any incompatible change.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "replayer/latency_histogram.h"

namespace memreplay {

inline constexpr int kMetricsSchemaVersion = 1;

struct TimelinePoint {
  uint64_t event = 0;  // index over alloc + free_completed events, start of the bucket
  uint64_t time_ns = 0;
  uint64_t reserved = 0;  // maximum within the bucket
  uint64_t allocated = 0;
  uint64_t requested = 0;
};

// Per-operation latencies, split by whether the operation needed a device call.
struct OperationLatencies {
  LatencySummary allocate_cached;
  LatencySummary allocate_device_call;
  LatencySummary free_cached;
  LatencySummary free_device_call;
};

// What an incomplete trace (a job that crashed mid-write: no footer) lost; see TraceReader::loss.
struct TraceLoss {
  uint64_t whole_events = 0;  // events in whole chunks; the replay saw at most these
  uint64_t lost_bytes = 0;  // bytes after the last whole chunk
  uint64_t file_bytes = 0;
  std::string reason;
};

struct ReplayMetrics {
  std::string policy;
  std::string device;  // "sim" or "cuda:N"
  uint32_t trace_device = 0;
  std::optional<uint64_t> capacity;
  uint64_t events = 0;  // alloc + free_completed events replayed
  uint64_t reserved_peak = 0;
  uint64_t allocated_peak = 0;
  uint64_t requested_peak = 0;
  uint64_t device_alloc_calls = 0;  // cudaMalloc + map calls (PyTorch's num_device_alloc)
  uint64_t device_free_calls = 0;  // cudaFree + unmap calls (num_device_free)
  uint64_t alloc_retries = 0;
  uint64_t ooms = 0;
  std::optional<uint64_t> oom_at_event;  // replay index of the first failing allocation
  std::optional<uint64_t> oom_trace_event;  // its index among all events of the trace file
  std::optional<uint64_t> oom_request_bytes;
  uint32_t oom_stack = 0;  // its stack id in the trace, 0 if none
  uint64_t preexisting_segments = 0;  // adopted from a trace that starts mid-run
  uint64_t skipped_events = 0;  // inconsistent events skipped under --lenient
  std::optional<std::string> first_skipped;  // "event N: why" of the first of them
  // Every cudaMalloc placed where the trace recorded it (the replay made the trace's own calls).
  bool recorded_placement = false;
  double replay_seconds = 0;
  double device_call_seconds = 0;  // inside driver calls (real devices only)
  std::optional<OperationLatencies> latency;  // with --time-operations
  // At the moment reserved memory peaked:
  double fragmentation_at_peak = 0;  // 1 - allocated/reserved
  double free_fragmentation_at_peak = 0;  // 1 - largest_free/total_free (0 when nothing free)
  uint64_t largest_free_at_peak = 0;
  uint64_t total_free_at_peak = 0;
  std::map<std::string, uint64_t> device_counters;  // every driver-level call count
  std::map<std::string, uint64_t> policy_stats;  // what only the policy can know
  std::vector<TimelinePoint> timeline;
  // False for a trace cut off mid-write: the numbers cover only its whole chunks (`loss` says
  // how much was lost). JSON "complete", and "incomplete" with the loss.
  bool complete = true;
  std::optional<TraceLoss> loss;
};

// The one-line warning for a replay of an incomplete trace ("TRACE is incomplete: ..."), naming
// the last whole event and the bytes lost; nullopt for a complete one.
std::optional<std::string> incomplete_warning(const std::string& trace, const ReplayMetrics& m);

// The one-line warning for a replay that skipped inconsistent events under --lenient ("TRACE:
// --lenient skipped N events ..."), naming the first; nullopt when it skipped none.
std::optional<std::string> skipped_warning(const std::string& trace, const ReplayMetrics& m);

nlohmann::json to_json(const ReplayMetrics& m);

}  // namespace memreplay
