// A trace and its replays as Chrome trace-event JSON ({"traceEvents": [...]}), which Perfetto's UI
// and chrome://tracing open: per policy a counter track of reserved, allocated and requested
// bytes (one value per replayed event whose numbers changed, in trace time), and every
// allocation of the trace as an async slice from its alloc to its free_completed, on a track
// per stream.
#pragma once

#include <string>
#include <vector>

#include "replayer/metrics.h"

namespace memreplay::results {

// `replays`: metrics with full-resolution timelines (ReplayOptions::timeline_points at least the
// number of replayed events).
std::string export_perfetto(const std::string& trace_path, uint32_t trace_device,
                            const std::vector<ReplayMetrics>& replays);

}  // namespace memreplay::results
