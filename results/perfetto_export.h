// A trace and its replays as Chrome trace-event JSON ({"traceEvents": [...]}), which Perfetto's UI
// and chrome://tracing open: per policy a counter track of reserved, allocated and requested
// bytes (see counter_samples), and every
// allocation of the trace as an async slice from its alloc to its free_completed, on a track
// per stream.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "replayer/metrics.h"

namespace memreplay::results {

inline constexpr size_t kCounterBuckets = 8192;

// Which points of a full-resolution timeline become counter samples. The trace's time is cut into
// `buckets` equal spans; in each, the points of the highest and lowest allocated bytes, of the
// highest requested bytes and the last one are kept, and every point where reserved bytes change
// (a device call). So reserved is exact at every step, the peaks of all three are exact values
// at the moment they happened, and a viewer draws the same envelope from about 4 * buckets
// samples instead of one per event. A sample equal to the one before it is left out.
std::vector<size_t> counter_samples(const std::vector<TimelinePoint>& timeline, size_t buckets = kCounterBuckets);

// `replays`: metrics with full-resolution timelines (ReplayOptions::timeline_points at least the
// number of replayed events).
std::string export_perfetto(const std::string& trace_path, uint32_t trace_device,
                            const std::vector<ReplayMetrics>& replays);

// The policies an export to Perfetto replays: those asked, pytorch when none.
std::vector<std::string> perfetto_export_policies(const std::vector<std::string>& asked);
// What `memreplay export --to perfetto` writes: the trace replayed under each of
// perfetto_export_policies(policies) with full-resolution timelines (up to 16M events), then
// export_perfetto.
std::string export_perfetto_replays(const std::string& trace_path, uint32_t trace_device,
                                    const std::vector<std::string>& policies);

}  // namespace memreplay::results
