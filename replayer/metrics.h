// ReplayMetrics: what one replay measured, and its JSON form. The JSON keys are a documented,
// stable schema (README "Metrics"); bump schema::kMetrics (proto/schema_versions.h) on any
// incompatible change.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "policies/device.h"
#include "replayer/latency_histogram.h"

namespace memreplay {

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

// The device calls of a replay, one definition for every command and table: each kind as the
// device counted it. Address reservations (cuMemAddressReserve/Free) and a pool's allocations
// served from memory it already holds are not device calls here: they take no physical memory.
struct DeviceCalls {
  uint64_t mallocs = 0;  // cudaMalloc
  uint64_t frees = 0;  // cudaFree
  uint64_t maps = 0;  // map(): cuMemCreate + cuMemMap of a run of pages
  uint64_t unmaps = 0;  // unmap(): cuMemUnmap + cuMemRelease
  uint64_t pool_grows = 0;  // stream-ordered pool allocations that grew the pool
  uint64_t pool_trims = 0;  // cudaMemPoolTrimTo
  uint64_t total() const { return mallocs + frees + maps + unmaps + pool_grows + pool_trims; }
  friend bool operator==(const DeviceCalls&, const DeviceCalls&) = default;
};
DeviceCalls device_calls_of(const DeviceCounters& counters);
// {"mallocs": ..., "pool_trims": ...}: the device_calls_by_kind of every JSON output.
nlohmann::json to_json(const DeviceCalls& calls);
// The footnote every table with a device-calls column prints.
inline constexpr const char* kDeviceCallsDefinition =
    "device calls = mallocs + frees + maps + unmaps + pool grows + pool trims (cudaMalloc, cudaFree, cuMemMap, "
    "cuMemUnmap; a stream-ordered pool's allocations that grew it, cudaMemPoolTrimTo)";

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
  DeviceCalls device_calls;  // what every command counts and prints (total_device_calls)
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
  uint64_t device_memory = 0;  // the device's whole memory (a simulated device's: the trace's GPU)
  // "At the peak" is one moment: of the moments between events when reserved bytes stand at their
  // highest, the first with the most bytes allocated. The reserved bytes not handed out then were
  // never needed while the peak held; it is also the moment `advise` and `report` draw.
  std::optional<uint64_t> peak_replay_event;  // that moment: after this replayed event
  std::optional<uint64_t> peak_trace_event;  // ... which is this event of the trace file
  double fragmentation_at_peak = 0;  // 1 - allocated/reserved then
  // The other end: 1 - allocated/reserved at the peak's least-used moment (the most ever unused).
  double fragmentation_at_peak_max = 0;
  double free_fragmentation_at_peak = 0;  // 1 - largest_free/total_free then (0 when nothing free)
  uint64_t largest_free_at_peak = 0;
  uint64_t total_free_at_peak = 0;
  std::map<std::string, uint64_t> device_counters;  // every driver-level call count
  std::map<std::string, uint64_t> policy_stats;  // what only the policy can know
  std::vector<TimelinePoint> timeline;
  // False for a trace cut off mid-write: the numbers cover only its whole chunks (`loss` says
  // how much was lost). JSON "trace_complete", and "incomplete" with the loss.
  bool trace_complete = true;
  std::optional<TraceLoss> loss;
  // The replay stopped at its first OOM (without --keep-going): the events after it were not replayed.
  bool stopped_at_oom = false;
  // Complete: every event of a whole trace replayed (no OOM stop, no part of the file lost). Only a
  // complete replay's numbers describe the whole run.
  bool complete() const { return trace_complete && !stopped_at_oom; }
};

uint64_t total_device_calls(const ReplayMetrics& m);

// The one-line warning for a replay of an incomplete trace ("TRACE is incomplete: ..."), naming
// the last whole event and the bytes lost; nullopt for a complete one.
std::optional<std::string> incomplete_warning(const std::string& trace, const ReplayMetrics& m);

// The one-line warning for a replay that skipped inconsistent events under --lenient ("TRACE:
// --lenient skipped N events ..."), naming the first; nullopt when it skipped none.
std::optional<std::string> skipped_warning(const std::string& trace, const ReplayMetrics& m);

nlohmann::json to_json(const ReplayMetrics& m);

}  // namespace memreplay
