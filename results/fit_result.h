// What `memreplay fit` answers, as the JSON its --json writes (and memreplay.fit returns): for a
// capacity, whether the trace fits there and, if not, the first allocation that fails with its
// stack; without one, the capacity scan (fit_scan.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "replayer/metrics.h"
#include "replayer/replay_options.h"
#include "results/fit_scan.h"

namespace memreplay::results {

// The first failing allocation of `m` (replay and trace event, bytes, stack frames from `trace`);
// null when it did not run out of memory.
nlohmann::json oom_json(const ReplayMetrics& m, const std::string& trace);
// `m`: the replay of `replay` under its capacity (headroom_bytes: the capacity minus the reserved
// peak where it fits).
nlohmann::json fit_at_capacity_json(const ReplayOptions& replay, const ReplayMetrics& m);
nlohmann::json fit_scan_json(const ReplayOptions& replay, const FitScan& scan);
// One result: that object, as before; several: {"results": [...]}; with schema_version either way.
nlohmann::json fit_json(const std::vector<nlohmann::json>& results);

}  // namespace memreplay::results
