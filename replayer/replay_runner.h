// Runs whole replays from a trace file: the glue behind `memreplay replay`, `compare` and `fit`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "policies/device.h"
#include "policies/policy.h"
#include "replayer/metrics.h"
#include "replayer/replay_options.h"

namespace memreplay {

namespace proto {
class TraceHeader;
}
class TraceReader;

// What one replay runs on: a fresh device (options.device_spec, sized by options.capacity and the
// trace header's total memory for options.trace_device) and a policy (options.policy_spec) on it.
// A bad spec is an InputError naming --policy.
struct ReplayTarget {
  std::unique_ptr<Device> device;
  std::unique_ptr<Policy> policy;
};
ReplayTarget make_replay_target(const TraceReader& reader, const ReplayOptions& options);

// The warning for replaying a trace with a policy that decides by graph captures
// (PolicyInfo::decides_by_capture) when the trace cannot say which of its private-pool allocations
// were made under one; nullopt otherwise.
std::optional<std::string> capture_warning(const std::string& trace, const proto::TraceHeader& header,
                                           const std::string& policy_spec);

// What a session takes from the trace's header: the pool check for traces with private pools,
// and what the trace says of CUDA graph captures (ReplayOptions::captures_flagged, capture_pools).
void read_trace_header(const proto::TraceHeader& header, ReplayOptions& options);

// Refuses, with an InputError naming the file, a trace of which no event could be read: one cut
// off before its first whole chunk, or one that holds no event. Either would replay (or validate)
// as nothing at all, its zeros read as a result.
void refuse_eventless_trace(const TraceReader& reader, bool read_any_event);

// Streams the trace through a fresh device and policy. Throws InputError for a bad trace, a bad
// policy spec (as InputError naming the option) or an unusable device. A trace cut off mid-write
// replays up to its last whole chunk, and the metrics say so (complete, loss; incomplete_warning);
// one with no event to read is refused (refuse_eventless_trace).
ReplayMetrics run_replay(const ReplayOptions& options);

// The warning for replaying `trace` with `policy_spec` when the trace's torch release (its header's
// setting torch_version) is another major.minor than the one the policy models
// (torch_version_mismatch, policies/torch_version.h); nullopt when there is nothing to say.
std::optional<std::string> torch_version_warning(const std::string& trace, const proto::TraceHeader& header,
                                                 const std::string& policy_spec);
// The same from the trace's own header; nothing for a trace that cannot be read (its replay says why).
std::optional<std::string> torch_version_warning(const std::string& trace, const std::string& policy_spec);

// The per-process cap the trace recorded for `trace_device` (the header's DeviceInfo.cap_bytes: the
// run's set_per_process_memory_fraction, which memreplay.torch writes, or `import --capacity`), if any.
std::optional<uint64_t> recorded_capacity(const proto::TraceHeader& header, uint32_t trace_device);
// For a replay given no capacity: options.capacity set to the cap the trace recorded for
// options.trace_device, and the line that says so. Nothing (options unchanged) when a capacity was
// given, the trace recorded none, or it cannot be read (its replay says why). replay, compare,
// advise and report take it; fit (which searches the capacity), sweep and check do not.
std::optional<std::string> use_recorded_capacity(ReplayOptions& options);

// What to tell the user before a replay, one line each: torch_version_warning (a trace that cannot
// be read says nothing here: the replay reports it), and options that would silently do nothing:
// garbage_collection_threshold without a cap, per_process_memory_fraction next to a capacity
// (which wins).
std::vector<std::string> replay_warnings_before(const ReplayOptions& options);
// ... and after it: a trace device with no alloc or free events; the events --lenient skipped
// (skipped_warning, replayer/metrics.h).
std::vector<std::string> replay_warnings_after(const ReplayOptions& options, const ReplayMetrics& m);

// A trace without its footer (cut off mid-write) is refused unless `allowed`: an InputError naming
// the trace, why it is incomplete and `consequence` (what is not done, and how to do it anyway).
void refuse_incomplete_trace(const std::string& trace, bool allowed, const std::string& consequence);

// What a trace cut off mid-write lost, into `metrics` (trace_complete, loss), once the replay has
// read all of `reader` that it could.
void note_trace_loss(TraceReader& reader, ReplayMetrics& metrics);

// run_replay without a cap and stopping at an OOM: the ceiling a capacity search starts from.
// Throws InputError when even that runs out of memory.
ReplayMetrics run_uncapped_replay(const ReplayOptions& options);

// The most bytes the trace's own cudaMalloc calls held at once: its segment_alloc and segment_free
// events of options.trace_device, failed calls left out (one pass over the trace, no replay).
uint64_t recorded_malloc_peak(const ReplayOptions& options);

// Whether the trace replays without running out of memory at `capacity` (capped, stopping at the
// first OOM), for one probe of a capacity search. A replay that makes the trace's own
// cudaMalloc/cudaFree calls reaches their peak, so one capped below `recorded_peak` cannot make
// them all: it leaves them (RecordedPlacement), and run_replay would replay it again on the address
// model, or it runs out of memory while still making them. Such a probe is placed by the model from
// its start: one replay, not two. Its verdict is run_replay's unless the model fits where the
// replay that follows the recorded calls ran out of memory before leaving them; on the shared and
// pool traces every fit result is the same (tests/recorded_placement_test.cpp).
bool fits_at(const ReplayOptions& options, uint64_t capacity, uint64_t recorded_peak);

struct FitResult {
  uint64_t min_fit_bytes = 0;  // smallest capacity found that replays without OOM
  uint64_t max_fail_bytes = 0;  // largest capacity found that OOMs
  uint64_t resolution_bytes = 0;  // min_fit_bytes - max_fail_bytes
  uint64_t replays = 0;
  ReplayMetrics uncapped;  // the replay without a cap that bounds the search
};

// Bisection over the capacity between the requested peak (nothing can fit below it) and the
// uncapped reserved peak (always fits), down to `resolution_bytes`.
FitResult find_min_capacity(const ReplayOptions& options, uint64_t resolution_bytes);

}  // namespace memreplay
